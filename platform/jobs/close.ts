/**
 * Closing BullMQ workers and queues without hanging on a Redis that is down: close() waits for
 * Redis (and, for a worker, for its running jobs). With Redis up each gets `graceMs` to finish its
 * jobs; with Redis down there is nothing to finish them into, so each gets half a second. Then a
 * worker is closed by force and the drain goes on.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export interface Closable {
  close(force?: boolean): Promise<void>;
}

export async function closeBounded(closables: Iterable<Closable>, redisUp: boolean, graceMs = 60_000): Promise<void> {
  await Promise.all([...closables].map(async (c) => {
    const closed = c.close().then(() => true, () => true);
    const done = await Promise.race([closed, sleep(redisUp ? graceMs : 500).then(() => false)]);
    if (!done) void c.close(true).catch(() => undefined);
  }));
}
