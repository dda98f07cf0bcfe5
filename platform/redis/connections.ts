/**
 * Redis connections as Hearth opens them. A command connection fails a command at once while
 * Redis is down (one retry, no offline queue once it has connected), so a request gets 503 rather
 * than waiting; a blocking one (a subscriber, BullMQ's workers) waits for Redis as long as it takes.
 */
import { Redis } from 'ioredis';

/**
 * For commands: fails fast while Redis is down. A connection still making its first connect is not
 * Redis down: a command sent then waits for it (ioredis' offline queue, until the first `ready`),
 * and fails only if that connect fails twice (maxRetriesPerRequest). Without this, a node that
 * used a connection in its first milliseconds logged "Redis is not answering: Stream isn't
 * writeable" against a healthy Redis.
 */
export function commandConnection(url: string, options: { lazyConnect?: boolean; offlineQueue?: boolean } = {}): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    lazyConnect: options.lazyConnect ?? false,
  });
  // ioredis reads the option at each command: from the first ready on, no queue while Redis is away.
  if (!options.offlineQueue)
    redis.once('ready', () => {
      redis.options.enableOfflineQueue = false;
    });
  return redis;
}

/** For subscribers and blocking commands: retries for as long as Redis is away. */
export function blockingConnection(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null });
}

/** BullMQ's connection options (it opens its own, blocking, connections) and its key prefix. */
export function bullConnection(
  url: string,
  prefix: string,
): { connection: { url: string; maxRetriesPerRequest: null }; prefix: string } {
  return { connection: { url, maxRetriesPerRequest: null }, prefix: `${prefix}bull` };
}

/** Whether a connection can take commands now ("Redis is down" is its opposite). */
export function redisUp(redis: Redis): boolean {
  return redis.status === 'ready';
}
