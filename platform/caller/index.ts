/**
 * The caller, as HTTP and gRPC both read it off a call: who it is — its API key, the key's scope and
 * tenant (./api-keys.ts) and its opaque id (./caller-id.ts) — and which request it is, by the id it
 * sent or one made for it (./request-id.ts).
 */
export type { Caller, Scope } from './api-keys.js';
export { allows, authorize, findKey, keyOf, NO_KEYS, SEND_A_KEY } from './api-keys.js';
export { callerId } from './caller-id.js';
export { requestIdOf } from './request-id.js';
