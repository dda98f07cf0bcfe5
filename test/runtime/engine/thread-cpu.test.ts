import { Worker } from 'node:worker_threads';

import { describe, expect, it } from 'vitest';

import { threadCpuClock } from '../../../runtime/engine/index.js';

describe("threadCpuClock: the calling thread's CPU time (what a hook's work cost its thread)", () => {
  it('counts the thread’s own work, not its waits nor another thread’s work', async () => {
    const clock = threadCpuClock();
    const w0 = performance.now();
    const t0 = clock();
    const until = performance.now() + 30;
    while (performance.now() < until);
    const spun = clock() - t0;
    const wallUs = (performance.now() - w0) * 1000;
    // A thread's CPU time cannot pass the wall time around its two readings (on a busy machine the
    // thread may wait for a core in the loop, and a pause after it stretches both alike).
    expect(spun).toBeGreaterThan(1000);
    expect(spun).toBeLessThanOrEqual(wallUs + 1000);

    const t1 = clock();
    // Another thread spins 500 ms while this one waits (starting it costs this one a little).
    const other = new Worker('const t = Date.now() + 500; while (Date.now() < t);', { eval: true });
    await new Promise((resolve) => other.once('exit', resolve));
    expect(clock() - t1).toBeLessThan(250_000);
  });
});
