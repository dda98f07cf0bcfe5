/** The registry chosen by configuration: files under the data dir, or Redis. */

import type { Config } from '../config/index.js';
import { commandConnection } from '../redis/index.js';
import { FsRegistry } from './fs/fs-registry.js';
import { RedisRegistry } from './redis/redis-registry.js';
import type { Registry } from './registry.js';

export { FsRegistry } from './fs/fs-registry.js';
export { parseVersion } from './parse-version.js';
export { RedisRegistry } from './redis/redis-registry.js';
export * from './registry.js';
export { KEEP_TRAFFIC, WAITING_FOR_GPU } from './stored-record.js';

export function createRegistry(config: Config): Registry {
  if (!config.redisUrl) return new FsRegistry(config.dataDir);
  // Fail fast while Redis is down (callers get 503), and keep reconnecting in the background.
  const redis = commandConnection(config.redisUrl);
  redis.on('error', () => undefined);
  return new RedisRegistry(redis, config.redisPrefix);
}
