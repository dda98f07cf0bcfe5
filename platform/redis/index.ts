export type { Closable } from './close.js';
export { closeBounded } from './close.js';
export { blockingConnection, bullConnection, commandConnection, redisUp } from './connections.js';
export { withoutCredentials } from './url.js';
