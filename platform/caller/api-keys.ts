/**
 * What every transport (HTTP, gRPC) checks the same way: the caller's API key and scope.
 *
 * API keys: `Authorization: Bearer <key>` (or `X-Api-Key`), each with a scope. With no keys
 * configured every request passes; with keys, `invoke` may call functions, `shm` may also register
 * system shared memory (a segment on the node's host, mapped by the node), and `admin` may do
 * anything, managing functions included.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

import { PermissionDeniedError, UnauthenticatedError } from '../../sdk/errors.js';
import type { ApiKey } from '../config/index.js';

export type Scope = 'invoke' | 'shm' | 'admin';

/** What each scope includes: a key of a scope may do what the scopes before it may. */
const RANK: Record<Scope, number> = { invoke: 0, shm: 1, admin: 2 };

/**
 * Throws UnauthenticatedError or PermissionDeniedError; `header` reads a request header. Returns
 * the caller's key ('' with no keys configured): what the caller's own resources are scoped by.
 */
export function authorize(keys: ApiKey[], scope: Scope, header: (name: string) => string | undefined): string {
  if (keys.length === 0) return '';
  const bearer = header('authorization');
  const given = bearer?.startsWith('Bearer ') ? bearer.slice(7) : header('x-api-key');
  const key = given === undefined ? undefined : findKey(keys, given);
  if (!key) throw new UnauthenticatedError('send an API key: Authorization: Bearer <key>');
  if (RANK[key.scope] < RANK[scope])
    throw new PermissionDeniedError(
      scope === 'admin'
        ? 'this API key may invoke functions but not manage them (needs scope admin)'
        : 'this API key may invoke functions but not register shared memory (needs scope shm or admin)',
    );
  return key.key;
}

const digest = (key: string): Buffer => createHash('sha256').update(key).digest();
/** The configured keys' digests, made once. */
const digests = new WeakMap<ApiKey, Buffer>();
const digestOf = (k: ApiKey): Buffer => {
  const known = digests.get(k);
  if (known) return known;
  const d = digest(k.key);
  digests.set(k, d);
  return d;
};

/**
 * The configured key equal to `given`, compared in constant time: both sides are hashed to 32
 * bytes (so neither length nor a common prefix shows in the timing) and every key is compared,
 * whichever matches.
 */
export function findKey(keys: readonly ApiKey[], given: string): ApiKey | undefined {
  const probe = digest(given);
  let found: ApiKey | undefined;
  for (const k of keys) if (timingSafeEqual(digestOf(k), probe) && !found) found = k;
  return found;
}
