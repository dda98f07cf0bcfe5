/**
 * What every transport (HTTP, gRPC) checks the same way: the caller's API key, its scope and tenant.
 *
 * API keys: `Authorization: Bearer <key>` (or `X-Api-Key`), each with a scope and a tenant
 * (../config/api-keys.ts). With no keys configured every request passes, as the default tenant's
 * admin. With keys: `invoke` may call its tenant's functions (or those its key names), `shm` may
 * also register system shared memory (a segment on the node's host, mapped by the node), `deploy`
 * may call and manage its tenant's functions, secrets and artifacts, and `admin` may do anything,
 * across tenants (the node itself included).
 */
import { createHash, timingSafeEqual } from 'node:crypto';

import { PermissionDeniedError, UnauthenticatedError } from '../../sdk/errors.js';
import type { ApiKey } from '../config/index.js';
import { DEFAULT_TENANT } from '../config/index.js';
import { callerId } from './caller-id.js';

export type Scope = ApiKey['scope'];

/** Who sent a request, as every check past the transport reads it. */
export interface Caller {
  /** The API key sent ('' with no keys configured): what its shared memory regions belong to. */
  readonly key: string;
  /** Its stable, opaque id (./caller-id.ts): what its sequences, idempotency keys and jobs are keyed by. */
  readonly id: string;
  readonly scope: Scope;
  /** The tenant whose functions, secrets and artifacts it reaches (an admin reaches all). */
  readonly tenant: string;
  /** An invoke key limited to these functions of its tenant. */
  readonly functions?: readonly string[];
}

/** The caller of a node with no keys: the default tenant's admin. */
export const NO_KEYS: Caller = { key: '', id: '', scope: 'admin', tenant: DEFAULT_TENANT };

/** What each scope may do beside its own name. */
const GRANTS: Record<Scope, readonly Scope[]> = {
  invoke: ['invoke'],
  shm: ['invoke', 'shm'],
  deploy: ['invoke', 'deploy'],
  admin: ['invoke', 'shm', 'deploy', 'admin'],
};

const NEEDS: Record<Scope, string> = {
  invoke: 'invoke',
  shm: 'register system shared memory (needs scope shm or admin)',
  deploy: 'deploy or manage functions, secrets or artifacts (needs scope deploy or admin)',
  admin: 'manage the node (needs scope admin)',
};

/** Whether a caller's scope allows what `scope` guards. */
export function allows(caller: Caller, scope: Scope): boolean {
  return GRANTS[caller.scope].includes(scope);
}

/** What a request without a key that the node knows is told. */
export const SEND_A_KEY = 'send an API key: Authorization: Bearer <key>';

/** The configured key a request names (Authorization: Bearer, else x-api-key), if it names one. */
export function keyOf(keys: readonly ApiKey[], header: (name: string) => string | undefined): ApiKey | undefined {
  const bearer = header('authorization');
  const given = bearer?.startsWith('Bearer ') ? bearer.slice(7) : header('x-api-key');
  return given === undefined ? undefined : findKey(keys, given);
}

/**
 * The caller of a request, by its key, if its scope allows `scope`; else UnauthenticatedError or
 * PermissionDeniedError. `header` reads a request header.
 */
export function authorize(keys: ApiKey[], scope: Scope, header: (name: string) => string | undefined): Caller {
  if (keys.length === 0) return NO_KEYS;
  const key = keyOf(keys, header);
  if (!key) throw new UnauthenticatedError(SEND_A_KEY);
  const caller = callerOf(key);
  if (!allows(caller, scope))
    throw new PermissionDeniedError(`this API key (scope ${key.scope}) may not ${NEEDS[scope]}`);
  return caller;
}

/** A configured key's caller, made once per key. */
const callers = new WeakMap<ApiKey, Caller>();
function callerOf(k: ApiKey): Caller {
  let caller = callers.get(k);
  if (!caller) {
    caller = Object.freeze({
      key: k.key,
      id: callerId(k.key),
      scope: k.scope,
      tenant: k.tenant,
      ...(k.functions ? { functions: Object.freeze([...k.functions]) } : {}),
    });
    callers.set(k, caller);
  }
  return caller;
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
