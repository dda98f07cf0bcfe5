export { blockingConnection, bullConnection, commandConnection, redisUp } from './connections.js';
export { closeBounded } from './close.js';
export type { Closable } from './close.js';
