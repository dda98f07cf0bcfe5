/**
 * What the BullMQ adapter asks of its Redis: a server that never evicts keys under memory pressure
 * (maxmemory-policy noeviction: an evicted queue key loses jobs silently), checked before the node
 * starts; and, while the server is down, a 503 for the caller rather than a wait.
 */
import { InvalidInputError, UnavailableError } from '../../../sdk/errors.js';
import { commandConnection, withoutCredentials } from '../../redis/index.js';

/**
 * Throws unless the Redis server's maxmemory-policy is noeviction; and, said as such, when it does
 * not answer (a node in cluster mode cannot start without it: its orchestrator restarts it).
 */
export async function checkNoEviction(redisUrl: string): Promise<void> {
  const redis = commandConnection(redisUrl, { lazyConnect: true, offlineQueue: true });
  let cause: Error | undefined;
  redis.on('error', (error: Error) => {
    cause ??= error;
  });
  try {
    const [, policy] = (await redis
      .connect()
      .then(() => redis.config('GET', 'maxmemory-policy'))
      .catch((error: Error) => {
        throw new UnavailableError(
          `Redis at ${withoutCredentials(redisUrl)} is not answering (${(cause ?? error).message}): start it, or point REDIS_URL at one that runs`,
          { cause: cause ?? error },
        );
      })) as [string, string];
    if (policy !== 'noeviction') {
      throw new InvalidInputError(
        `Redis at ${withoutCredentials(redisUrl)} has maxmemory-policy ${policy}: Hearth's job queues need noeviction (an evicted queue key loses jobs). Run CONFIG SET maxmemory-policy noeviction, or set it in redis.conf`,
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
