/** A request's id, on either transport: the caller's `x-request-id` when it is well formed, else a new one. */
import { randomUUID } from 'node:crypto';

const REQUEST_ID = /^[\w.:-]{1,128}$/;

export function requestIdOf(headers: Record<string, string | string[] | undefined>): string {
  const given = headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}
