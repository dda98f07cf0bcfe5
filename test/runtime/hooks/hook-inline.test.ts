import { describe, expect, it } from 'vitest';

import { INLINE_UNDER_US } from '../../../runtime/hooks/hook-cost.js';
import type { HookPool } from '../../../runtime/hooks/index.js';
import { json, pool, y } from './hook-pools.js';

/**
 * A hook under load on the calling thread (a runner's own): where its measured cost a request is
 * under a hop to a hook thread (runtime/hooks/hook-cost.ts), and how a call that loops there is
 * answered.
 */
describe('a cheap hook on the calling thread under load', () => {
  const burst = (hooks: HookPool, n: number, body: (i: number) => unknown = () => ({})) =>
    Promise.all(
      Array.from({ length: n }, (_, i) =>
        hooks.pre(json(body(i)), {}).then(
          (r) => (r.tensors.x ? 'ok' : 'no x'),
          (e: Error) => e.message,
        ),
      ),
    );

  /** Bursts until the hook's cost says it is cheap (a new thread's first groups cost it its warm-up too). */
  const untilCheap = async (hooks: HookPool): Promise<void> => {
    for (let round = 0; round < 50 && !(hooks.costUs('pre') < INLINE_UNDER_US); round++)
      expect(await burst(hooks, 16)).toEqual(Array(16).fill('ok'));
    expect(hooks.costUs('pre')).toBeLessThan(INLINE_UNDER_US);
  };

  it('runs a cheap hook on this thread under load, a turn of pre calls in one crossing; a costly one on the threads', async () => {
    const cheap = await pool('loops', { sandbox: true, inline: true, threads: 1 });
    // Unknown, the hook's cost sends calls under load to the thread; groups there measure it.
    expect(cheap.costUs('pre')).toBe(Number.POSITIVE_INFINITY);
    await untilCheap(cheap);
    expect(cheap.inlineCalls).toBe(0);
    expect(await burst(cheap, 16)).toEqual(Array(16).fill('ok'));
    expect(cheap.inlineCalls).toBe(1);

    // 2 ms of CPU a request is worth a thread: the calls stay there.
    const costly = await pool('loops', { sandbox: true, inline: true, threads: 1 });
    for (let round = 0; round < 2; round++)
      expect(await burst(costly, 12, () => ({ spinMs: 2 }))).toEqual(Array(12).fill('ok'));
    // (the first burst measured it on the thread; the second went there too)
    expect(costly.costUs('pre')).toBeGreaterThan(INLINE_UNDER_US);
    expect(costly.inlineCalls).toBe(0);
  });

  it('stops requests that loop in a turn run on this thread, answers the rest, and sends the next turns to the threads', async () => {
    const hooks = await pool('loops', { sandbox: true, inline: true, threads: 1, timeoutMs: 300 });
    await untilCheap(hooks);
    const [inline0, tasks0] = [hooks.inlineCalls, hooks.threadTasks];
    const outcomes = await burst(hooks, 10, (i) => ({ loop: i === 4 || i === 7 }));
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(8);
    expect(outcomes[4]).toMatch(/failed in pre: ran past its 300 ms limit/);
    expect(outcomes[7]).toMatch(/failed in pre: ran past its 300 ms limit/);
    // The turn's crossing ran here and was stopped once; its requests were each run again alone on
    // the thread (not here, which would hold this thread a limit for each that loops).
    expect([hooks.inlineCalls - inline0, hooks.threadTasks - tasks0]).toEqual([1, 10]);
    // The loop cost the turn its limit: the hook is no longer cheap, and the next turn goes to the thread.
    expect(hooks.costUs('pre')).toBeGreaterThan(INLINE_UNDER_US);
    const inline = hooks.inlineCalls;
    expect(await burst(hooks, 4)).toEqual(Array(4).fill('ok'));
    expect(hooks.inlineCalls).toBe(inline);
  });

  it('runs a batch whose post loops on this thread again on the thread, each alone, and fails only the one that loops', async () => {
    const hooks = await pool('loops', { sandbox: true, inline: true, threads: 1, timeoutMs: 300 });
    const batch = (loopAt: number) =>
      hooks
        .post(
          Array.from({ length: 8 }, (_, i) => ({ outputs: y([[i, 0, 0]]), request: json({ loopPost: i === loopAt }) })),
          {},
        )
        .then((outs) => outs.map((o) => (o.ok ? 'ok' : o.error.message)));
    for (let round = 0; round < 50 && !(hooks.costUs('post') < INLINE_UNDER_US); round++)
      expect(await batch(-1)).toEqual(Array(8).fill('ok'));
    expect(hooks.costUs('post')).toBeLessThan(INLINE_UNDER_US);
    const [inline0, tasks0] = [hooks.inlineCalls, hooks.threadTasks];
    const outcomes = await batch(5);
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(7);
    expect(outcomes[5]).toMatch(/failed in post: ran past its 300 ms limit/);
    // One crossing here, stopped; the batch again on the thread in one task, which ran each alone.
    expect([hooks.inlineCalls - inline0, hooks.threadTasks - tasks0]).toEqual([1, 1]);
    expect(hooks.costUs('post')).toBeGreaterThan(INLINE_UNDER_US);
  });
});
