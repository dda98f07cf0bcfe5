/**
 * Many requests' hooks in one crossing of the sandbox (runtime/hooks/crossing.ts): each request
 * its own outcome, whatever the others do.
 */
import { describe, expect, it } from 'vitest';

import { HookSandbox } from '../../../runtime/hooks/sandbox.js';
import { parseSpec } from '../../../sdk/spec/index.js';
import { SMALL_SPEC } from '../../helpers/specs.js';
import { fixtureBundle, json, pool } from './hook-pools.js';

describe("a group's or a batch's hooks in one crossing", () => {
  it("runs a group's or a batch's hooks in one crossing, each request its own outcome, sync or async", async () => {
    const asks = ['sync', 'async', 'throw', 'reject', 'lie', 'sync'].map((how, i) => ({ how, v: i + 1 }));
    const outcome = (o: { ok: boolean; body?: Uint8Array; error?: Error }) =>
      o.ok ? JSON.parse(new TextDecoder().decode(o.body)) : o.error!.message;
    for (const inline of [true, false]) {
      const hooks = await pool('mixed', { sandbox: true, inline: true, threads: 1 });
      // pre: a request holds the only thread, and the six queue for it and go in one task.
      const first = hooks.pre(json({}), { inline });
      const pres = asks.map((a) =>
        hooks.pre(json(a), { inline }).then(
          (r) => Array.from(r.tensors.x!.data as Float32Array),
          (e: Error) => e.message,
        ),
      );
      await first;
      expect(await Promise.all(pres)).toEqual([
        [1, 1, 2, 3],
        [2, 1, 2, 3],
        expect.stringMatching(/failed in pre: thrown for 3/),
        expect.stringMatching(/failed in pre: rejected for 4/),
        expect.stringMatching(/failed in pre: the hook returned a typed array the sandbox could not read back/),
        [6, 1, 2, 3],
      ]);
      // post: a batch of six, each given its own row of the batch's output.
      const batch = new Float32Array(18).map((_, i) => i);
      const outputs = (i: number) => ({
        y: { dtype: 'FP32' as const, shape: [1, 3], data: batch.subarray(i * 3, i * 3 + 3) },
      });
      const posts = await hooks.post(
        asks.map((a, i) => ({ outputs: outputs(i), request: json(a) })),
        { inline },
      );
      expect(posts.map(outcome)).toEqual([
        { v: 1, y: [0, 1, 2], bufferBytes: 12 },
        { v: 2, y: [3, 4, 5], bufferBytes: 12 },
        expect.stringMatching(/failed in post: thrown for 3/),
        expect.stringMatching(/failed in post: rejected for 4/),
        { v: 5, y: [12, 13, 14], bufferBytes: 12 },
        { v: 6, y: [15, 16, 17], bufferBytes: 12 },
      ]);
    }
  });

  it('fails only the request that runs its sandbox out of memory, not the others of its group', async () => {
    const hooks = await pool('oom', { sandbox: true, maxHeapMb: 64, threads: 1 });
    // A request holds the only thread; the three queue for it and go in one crossing, which the
    // middle one takes down with its isolate.
    const first = hooks.pre(json({}), {});
    const group = [{}, { oom: true }, {}].map((body) =>
      hooks.pre(json(body), {}).then(
        (r) => (r.tensors.x ? 'ok' : 'no x'),
        (e: Error) => e.message,
      ),
    );
    await first;
    expect(await Promise.all(group)).toEqual(['ok', expect.stringMatching(/memory/), 'ok']);
    expect((await hooks.pre(json({}), {})).tensors.x).toBeDefined();
  });

  it("answers a hook that returns one buffer refilled for every request with each request's own values", async () => {
    // 32 KB answers are packed; 128 KB ones that are not parked leave as the hook's buffer itself.
    for (const [big, n] of [
      [false, 8192],
      [true, 32768],
    ] as const)
      for (const inline of [true, false]) {
        const wide = parseSpec({ ...SMALL_SPEC, hook: 'hook.ts', inputs: [{ name: 'x', dtype: 'FP32', dims: [n] }] });
        const hooks = await pool('reused-buffer', { sandbox: true, inline: true, threads: 1, spec: wide });
        for (const [v, wait] of [
          [1, false],
          [2, true],
          [3, false],
        ] as const) {
          const { tensors } = await hooks.pre(json({ v, wait, big }), { inline });
          const x = tensors.x!.data as Float32Array;
          expect([x.length, x[0], x[n - 1], new Set(x).size]).toEqual([n, v, v, 1]);
        }
        // Overlapping crossings (inline, on this thread): the first answer is parked (its hook
        // awaits) when a second call refills the same buffer and answers at once, and a third
        // after it; each must hold its own values. (On a thread they would go in one crossing.)
        if (!inline) continue;
        const calls = hooks.inlineCalls;
        const parked = hooks.pre(json({ v: 4, wait: true, big }), { inline });
        while (hooks.inlineCalls === calls) await Promise.resolve();
        const next = hooks.pre(json({ v: 5, big }), { inline });
        while (hooks.inlineCalls === calls + 1) await Promise.resolve();
        const last = hooks.pre(json({ v: 6, big }), { inline });
        const values = (await Promise.all([parked, next, last])).map((r) => new Set(r.tensors.x!.data as Float32Array));
        expect(values.map((v) => [...v])).toEqual([[4], [5], [6]]);
      }
  });

  it('takes a large buffer a hook returned out of the isolate before any hook runs again', async () => {
    // Two crossings of one sandbox, the second started while the first awaits its answer's
    // reading: the hook refills its one 128 KB buffer in each. The first's answer, the buffer
    // itself (not packed), must be taken before the second crossing runs.
    const options = { memoryMb: 128, maxResponseBytes: 2 ** 20, webAssembly: false, timeoutMs: 5000, log: () => {} };
    const sandbox = await HookSandbox.create({ ...options, bundlePath: (await fixtureBundle('reused-buffer')).path });
    const liar = await HookSandbox.create({ ...options, bundlePath: (await fixtureBundle('lying-buffer')).path });
    try {
      expect((await sandbox.setup({})).ok).toBe(true);
      // A hook that fools the glue into handing out a SharedArrayBuffer as its own: refused here.
      expect((await liar.setup({})).ok).toBe(true);
      const lie = (await liar.preMany([json({})]))[0]!;
      expect(lie.ok ? lie.tensors.x!.data.buffer instanceof SharedArrayBuffer : lie.message).toMatch(
        /could not read back/,
      );
      // A hook that names one 4 MB buffer 64 times, past the glue's de-duplication: the host takes
      // 32 MB of them at most (the isolate's cap) and fails the request, not 256 MB.
      const many = await HookSandbox.create({
        ...options,
        memoryMb: 32,
        bundlePath: (await fixtureBundle('own-many')).path,
      });
      try {
        expect((await many.setup({})).ok).toBe(true);
        const [answer] = await many.preMany([json({})]);
        expect(answer!.ok ? 'ok' : answer!.message).toMatch(/could not read back/);
      } finally {
        many.dispose();
      }
      const first = sandbox.preMany([json({ v: 1, big: true })]);
      const second = sandbox.preMany([json({ v: 2, big: true })]);
      const answers = [...(await first), ...(await second)];
      expect(answers.map((a) => (a.ok ? [...new Set(a.tensors.x!.data as Float32Array)] : a.message))).toEqual([
        [1],
        [2],
      ]);
    } finally {
      sandbox.dispose();
      liar.dispose();
    }
  });

  it("hands a hook its request's bytes as the whole of a buffer of their own, as the SDK says (viewAs needs no copy)", async () => {
    // The caller's bytes lie at offset 3 of a larger buffer; each hook must see its own only.
    const request = (n: number) => {
      // A view at offset 3 of a buffer that holds more (Buffer.from's shared pool for short strings).
      const all = Buffer.from('abcdefghijk'.repeat(n));
      return {
        body: new Uint8Array(all.buffer, all.byteOffset + 3, all.byteLength - 3),
        contentType: 'application/octet-stream',
      };
    };
    const place = (n: number) => [0, 1, 11 * n - 3, 100];
    // The outputs move to a hook thread (their buffer with them): new ones for each call.
    const y = () => ({ y: { dtype: 'FP32' as const, shape: [1, 3], data: new Float32Array(3) } });
    for (const sandbox of [true, false])
      for (const inline of [true, false]) {
        const hooks = await pool('body-place', { sandbox, inline: true, threads: 1 });
        // Small bodies packed together, and large ones (77 and 88 KB) that cross in buffers of their
        // own, between them: inline, all six in one crossing; on the thread, the first alone (it
        // holds the only thread), then the other five in one group.
        const sizes = [2, 3, 7000, 5, 8000, 7];
        const pres = await Promise.all(sizes.map((n) => hooks.pre(request(n), { inline })));
        expect(pres.map((r) => Array.from(r.tensors.x!.data as Float32Array))).toEqual(sizes.map(place));
        const posts = await hooks.post(
          [2, 3].map((n) => ({ outputs: y(), request: request(n) })),
          { inline },
        );
        expect(posts.map((p) => (p.ok ? JSON.parse(new TextDecoder().decode(p.body)) : p.error.message))).toEqual([
          { place: place(2) },
          { place: place(3) },
        ]);
      }
  });

  it('runs a turn of inline calls in crossings of at most 1 MiB of bodies; the rest go to the threads', async () => {
    const hooks = await pool('body-place', { sandbox: true, inline: true, threads: 1 });
    const body = (n: number, size: number) => ({
      body: new Uint8Array(size).fill(n),
      contentType: 'application/octet-stream',
    });
    const turn = async (size: number) => {
      const [inline, threads] = [hooks.inlineCalls, hooks.threadTasks];
      const rs = await Promise.all([1, 2, 3].map((n) => hooks.pre(body(n, size), { inline: true })));
      expect(rs.map((r) => Array.from(r.tensors.x!.data as Float32Array))).toEqual(
        [1, 2, 3].map((n) => [0, 1, size, n]),
      );
      return [hooks.inlineCalls - inline, hooks.threadTasks - threads];
    };
    // Three 1 MB bodies: the first on this thread, the two that would pass 1 MiB on the thread.
    expect(await turn(1_000_000)).toEqual([1, 2]);
    // The next turn starts afresh: three 30 KB bodies in one crossing here.
    expect(await turn(30_000)).toEqual([1, 0]);
  });
});
