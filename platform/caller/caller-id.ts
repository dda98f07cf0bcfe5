/** A caller's stable, opaque id, derived from its API key: what its own resources are keyed by. */
import { createHash } from 'node:crypto';

/** A caller's stable id from its API key: never the key itself ('' with no keys configured). */
export function callerId(apiKey: string): string {
  return apiKey === '' ? '' : createHash('sha256').update(`hearth-caller\0${apiKey}`).digest('hex').slice(0, 24);
}
