/**
 * Closing BullMQ workers and queues without hanging on a Redis that is down: close() waits for
 * Redis (and, for a worker, for its running jobs). Each gets up to `graceMs` to finish while Redis
 * answers; as soon as Redis is seen down there is nothing to finish the jobs into, so it is closed
 * by force and the drain goes on.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export interface Closable {
  close(force?: boolean): Promise<void>;
}

export async function closeBounded(
  closables: Iterable<Closable>,
  redisUp: () => boolean,
  graceMs = 60_000,
): Promise<void> {
  await Promise.all(
    [...closables].map(async (c) => {
      let done = false;
      const finish = (): void => {
        done = true;
      };
      const closed = c.close().then(finish, finish);
      const giveUp = Date.now() + graceMs;
      while (!done) {
        await Promise.race([closed, sleep(250)]);
        if (done) return;
        if (!redisUp() || Date.now() > giveUp) {
          void c.close(true).catch(() => undefined);
          return;
        }
      }
    }),
  );
}
