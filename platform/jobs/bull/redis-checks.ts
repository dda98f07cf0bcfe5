/**
 * What the BullMQ adapter asks of its Redis: a server that never evicts keys under memory pressure
 * (maxmemory-policy noeviction: an evicted queue key loses jobs silently), checked before the node
 * starts; and, while the server is down, a 503 for the caller rather than a wait.
 */
import { InvalidInputError, UnavailableError } from '../../../sdk/errors.js';
import { commandConnection } from '../../redis/index.js';

/** Throws unless the Redis server's maxmemory-policy is noeviction. */
export async function checkNoEviction(redisUrl: string): Promise<void> {
  const redis = commandConnection(redisUrl, { lazyConnect: true, offlineQueue: true });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    const [, policy] = (await redis.config('GET', 'maxmemory-policy')) as [string, string];
    if (policy !== 'noeviction') {
      throw new InvalidInputError(
        `Redis at ${redisUrl.replace(/\/\/[^@]*@/, '//')} has maxmemory-policy ${policy}: Hearth's job queues need noeviction (an evicted queue key loses jobs). Run CONFIG SET maxmemory-policy noeviction, or set it in redis.conf`,
      );
    }
  } finally {
    redis.disconnect();
  }
}

/** A failed command of the job store, as its caller hears it. */
export function redisDown(error: unknown): never {
  throw new UnavailableError(`the job store (Redis) is unavailable: ${(error as Error).message}`, { cause: error });
}
