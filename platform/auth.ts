/**
 * What every transport (HTTP, gRPC) checks the same way: the caller's API key and scope, and a
 * model version as a request names it.
 *
 * API keys: `Authorization: Bearer <key>` (or `X-Api-Key`), each with a scope. With no keys
 * configured every request passes; with keys, `invoke` may call functions and `admin` may also
 * manage them.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

import { InvalidInputError, PermissionDeniedError, UnauthenticatedError } from '../sdk/errors.js';
import type { ApiKey } from './config.js';

export type Scope = 'invoke' | 'admin';

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
  if (scope === 'admin' && key.scope !== 'admin')
    throw new PermissionDeniedError('this API key may invoke functions but not manage them (needs scope admin)');
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

/**
 * A version as a request names it (a `{version}` path segment, gRPC's `model_version`) → a version
 * number; absent or empty names none (the traffic split picks one).
 */
export function parseVersion(value: unknown): number | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !/^[1-9]\d*$/.test(value))
    throw new InvalidInputError(`version "${String(value)}" must be a positive integer`);
  return Number(value);
}
