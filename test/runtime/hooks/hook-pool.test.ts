import { describe, expect, it, onTestFinished } from 'vitest';

import { imageEncode } from '../../../runtime/engine/index.js';
import type { HookPool } from '../../../runtime/hooks/index.js';
import { SMALL_ARENA_BYTES } from '../../../runtime/hooks/sandbox-source.js';
import { DeadlineExceededError, HookError, InvalidInputError } from '../../../sdk/errors.js';
import { fixtureBundle, json, pool, y } from './hook-pools.js';

/**
 * A request takes the only thread; the next three, the middle one looping, queue for it and go
 * together in one task. What each of the three got: 'ok', or its error's message.
 */
async function grouped(hooks: HookPool): Promise<string[]> {
  const first = hooks.pre(json({}), {});
  const queued = [hooks.pre(json({}), {}), hooks.pre(json({ loop: true }), {}), hooks.pre(json({}), {})].map((p) =>
    p.then(
      () => 'ok',
      (e: Error) => e.message,
    ),
  );
  await first;
  return Promise.all(queued);
}

describe('hook threads', () => {
  it('runs a bundled hook: setup once, pre to tensors, post to a JSON response', async () => {
    const hooks = await pool('echo');
    const { tensors } = await hooks.pre(
      json({
        x: [
          [1, 2, 3, 4],
          [5, 6, 7, 8],
        ],
      }),
      {},
    );
    expect(tensors.x!.shape).toEqual([2, 4]);
    expect(Array.from(tensors.x!.data as Float32Array)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const [out] = await hooks.post([{ outputs: y([[1, 2, 3]]), request: json({}) }], {});
    if (!out?.ok) throw new Error('post failed');
    expect(out.contentType).toBe('application/json');
    expect(JSON.parse(new TextDecoder().decode(out.body))).toEqual({ y: [[1, 2, 3]], greeting: 'hello' });
  });

  it('runs the default hook when a function has none, refusing bad bodies as input errors', async () => {
    const hooks = await pool();
    const { tensors } = await hooks.pre(json({ inputs: { x: [[1, 2, 3, 4]] } }), {});
    expect(tensors.x!.shape).toEqual([1, 4]);
    await expect(hooks.pre(json({ inputs: { x: [[1, 2, 3]] } }), {})).rejects.toThrow(InvalidInputError);
    await expect(hooks.pre(json({ inputs: { z: [[1, 2, 3, 4]] } }), {})).rejects.toThrow(/missing input "x"/);
    await expect(
      hooks.pre({ body: new TextEncoder().encode('{not json'), contentType: 'application/json' }, {}),
    ).rejects.toThrow(/not valid JSON/);
    const [out] = await hooks.post([{ outputs: y([[0.5, 1, 2]]), request: json({}) }], {});
    if (!out?.ok) throw new Error('post failed');
    expect(JSON.parse(new TextDecoder().decode(out.body))).toEqual({ outputs: { y: [[0.5, 1, 2]] } });
    expect(out.contentType).toBe('application/json');
  });

  it('fails only the request whose hook throws, naming the hook and phase', async () => {
    const hooks = await pool('throws');
    await expect(hooks.pre(json({ boom: true }), {})).rejects.toThrow(
      /hook small\/hook\.ts failed in pre: boom in pre/,
    );
    const ok = await hooks.pre(json({ boom: false }), {});
    expect(ok.tensors.x!.shape).toEqual([1, 4]);
    const outcomes = await hooks.post([{ outputs: y([[1, 2, 3]]), request: json({}) }], {});
    expect(outcomes[0]!.ok).toBe(false);
    if (!outcomes[0]!.ok) {
      expect(outcomes[0]!.error).toBeInstanceOf(HookError);
      expect(outcomes[0]!.error.message).toMatch(/failed in post: boom in post/);
    }
  });

  it("refuses tensors of the wrong dtype from a hook as the hook's failure", async () => {
    const hooks = await pool('wrong-dtype');
    const error = await hooks.pre(json({}), {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HookError);
    expect((error as Error).message).toMatch(/input "x" has dtype FP64, expected FP32/);
  });

  it('terminates a hook that loops forever at its time limit and replaces its thread', async () => {
    const hooks = await pool('loops', { timeoutMs: 300, threads: 1 });
    await expect(hooks.pre(json({ loop: true }), {})).rejects.toThrow(/ran past its 300 ms limit and was terminated/);
    const ok = await hooks.pre(json({ loop: false }), {});
    expect(ok.tensors.x!.shape).toEqual([1, 4]);
  });

  it('runs requests that queue for a busy thread as one task, and fails only the looping one of them', async () => {
    const hooks = await pool('loops', { timeoutMs: 400, threads: 1 });
    // The looping one kills the group's task; each is then retried on its own.
    expect(await grouped(hooks)).toEqual(['ok', expect.stringMatching(/ran past its 400 ms limit/), 'ok']);
  });

  it("counts a hook's limit from its own start: not a new thread's start, nor the wait for it", async () => {
    // Each new thread takes 1.5 s to import the hook, past the 1 s limit: the looping call ends
    // its thread, and the call queued behind it runs on the replacement once that has loaded.
    const hooks = await pool('slow-start', { timeoutMs: 1000, threads: 1 });
    const looping = hooks.pre(json({ loop: true }), {});
    const behind = hooks.pre(json({}), {});
    await expect(looping).rejects.toThrow(/ran past its 1000 ms limit and was terminated/);
    expect((await behind).tensors.x!.shape).toEqual([1, 4]);
    expect((await hooks.pre(json({}), {})).tensors.x!.shape).toEqual([1, 4]);
  });

  it('reports a request deadline that passes while the hook runs as DeadlineExceededError', async () => {
    const hooks = await pool('loops', { timeoutMs: 10_000, threads: 1 });
    await expect(hooks.pre(json({ loop: true }), { deadline: performance.now() + 200 })).rejects.toThrow(
      DeadlineExceededError,
    );
    expect((await hooks.pre(json({}), {})).tensors.x).toBeDefined();
  });

  it('replaces a thread that exhausts its heap and keeps serving', async () => {
    const hooks = await pool('oom', { maxHeapMb: 64, threads: 1 });
    await expect(hooks.pre(json({ oom: true }), {})).rejects.toThrow(/ran out of memory|its thread failed/);
    expect((await hooks.pre(json({}), {})).tensors.x).toBeDefined();
  });

  it('gives hook threads no platform environment, and passes bytes and binary responses through', async () => {
    process.env.HEARTH_SECRET_FOR_TEST = 'do-not-leak';
    onTestFinished(() => {
      delete process.env.HEARTH_SECRET_FOR_TEST;
    });
    const hooks = await pool('env');
    const [env] = await hooks.post([{ outputs: y([[1, 2, 3]]), request: json({}) }], {});
    if (!env?.ok) throw new Error('post failed');
    expect(JSON.parse(new TextDecoder().decode(env.body))).toEqual({ env: [] });
    const [bin] = await hooks.post(
      [{ outputs: y([[1, 2, 3]]), request: { body: new Uint8Array([1, 2, 3]), contentType: 'image/png' } }],
      {},
    );
    if (!bin?.ok) throw new Error('post failed');
    expect([bin.contentType, Array.from(bin.body)]).toEqual(['application/octet-stream', [3, 2, 1]]);
  });

  it('fails to start a hook whose setup throws, and refuses a hook that does not bundle', async () => {
    await expect(pool('setup-throws')).rejects.toThrow(/failed in setup: cannot load the vocabulary/);
    await expect(fixtureBundle('broken')).rejects.toThrow(/does not bundle: .*does-not-exist/);
  });
});

describe('hooks in a V8 isolate (runner processes run them so)', () => {
  it('runs a hook with the SDK and answers as the same hook outside the isolate does', async () => {
    const direct = await pool('echo');
    const boxed = await pool('echo', { sandbox: true });
    for (const hooks of [direct, boxed]) {
      const { tensors } = await hooks.pre(
        json({
          x: [
            [1, 2, 3, 4],
            [5, 6, 7, 8],
          ],
        }),
        {},
      );
      expect(Array.from(tensors.x!.data as Float32Array)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      const [out] = await hooks.post([{ outputs: y([[1, 2, 3]]), request: json({}) }], {});
      if (!out?.ok) throw new Error('post failed');
      expect(JSON.parse(new TextDecoder().decode(out.body))).toEqual({ y: [[1, 2, 3]], greeting: 'hello' });
    }
  });

  it('gives the hook no Node API: no process, no environment, no modules', async () => {
    process.env.HEARTH_SECRET_FOR_TEST = 'do-not-leak';
    onTestFinished(() => {
      delete process.env.HEARTH_SECRET_FOR_TEST;
    });
    const hooks = await pool('env', { sandbox: true });
    const [env] = await hooks.post([{ outputs: y([[1, 2, 3]]), request: json({}) }], {});
    expect(env?.ok).toBe(false);
    if (env?.ok === false) expect(env.error.message).toMatch(/process is not defined/);
    const attacks = await pool('attacks', { sandbox: true });
    for (const attack of [{ attack: 'read', path: '/etc/passwd' }, { attack: 'exec' }, { attack: 'redis' }]) {
      const [out] = await attacks.post([{ outputs: y([[1, 2, 3]]), request: json(attack) }], {});
      if (!out?.ok) throw new Error('post failed');
      // The hook answers for itself: what its attempt threw, never what it read.
      expect([attack.attack, JSON.parse(new TextDecoder().decode(out.body))]).toEqual([
        attack.attack,
        { ok: false, error: expect.stringMatching(/not supported|not available|not defined/i) },
      ]);
    }
  });

  it('never ends a sandboxed thread: a group with a looping call fails only that call, a deadline answers at once', async () => {
    const hooks = await pool('loops', { sandbox: true, timeoutMs: 400, threads: 1 });
    // The isolate stopped the looping call at its limit; the group's other calls were answered.
    expect(await grouped(hooks)).toEqual(['ok', expect.stringMatching(/ran past its 400 ms limit/), 'ok']);
    await expect(hooks.pre(json({ loop: true }), { deadline: performance.now() + 100 })).rejects.toThrow(
      DeadlineExceededError,
    );
    // The same thread (not a replacement) finishes that call, stopped at 400 ms, and serves the next one.
    expect((await hooks.pre(json({}), {})).tensors.x).toBeDefined();
    expect(hooks.threads).toBe(1);
  });

  it('stops a looping hook at its time limit and caps its ArrayBuffers; the next request is served', async () => {
    const loops = await pool('loops', { sandbox: true, timeoutMs: 500, threads: 1 });
    await expect(loops.pre(json({ loop: true }), {})).rejects.toThrow(/500 ms limit|timed out/);
    expect((await loops.pre(json({}), {})).tensors.x).toBeDefined();
    const bomb = await pool('attacks', { sandbox: true, maxHeapMb: 64, threads: 1 });
    const [out] = await bomb.post([{ outputs: y([[1, 2, 3]]), request: json({ attack: 'bomb', mb: 1024 }) }], {});
    if (!out?.ok) throw new Error('post failed');
    expect(JSON.parse(new TextDecoder().decode(out.body))).toMatchObject({
      ok: false,
      error: expect.stringMatching(/Array buffer allocation failed/),
    });
    expect(process.memoryUsage().rss).toBeLessThan(2 * 2 ** 30);
  });

  it('gives a sandboxed hook every image function, their bytes moved into its isolate intact', async () => {
    const png = imageEncode(
      { width: 3, height: 2, channels: 3, data: new Uint8Array(18).map((_, i) => i * 13) },
      'png',
      75,
    );
    for (const inline of [false, true]) {
      const calls = await pool('image-calls', { sandbox: true, threads: 1, inline });
      // The body moves to the hook (a copy each time: the call takes its buffer).
      const r = await calls.pre({ body: png.slice(), contentType: 'image/png' }, { inline });
      expect(Array.from(r.tensors.x!.data as Float32Array)).toEqual([3, 2, 1, png.byteLength]);
    }
  });

  it("counts the image tensors the host moves into a hook's isolate against its memory, on a thread and inline", async () => {
    // 3 MB each: two fit in 64 MB, two hundred do not, and the hook that keeps them is stopped.
    for (const inline of [false, true]) {
      const hoard = await pool('image-hoard', { sandbox: true, maxHeapMb: 64, threads: 1, inline });
      const two = await hoard.pre(json({ hoard: 2 }), { inline });
      expect(Array.from(two.tensors.x!.data as Float32Array)).toEqual([(7 / 255) * 2, 2, 0, 0].map(Math.fround));
      await expect(hoard.pre(json({ hoard: 200 }), { inline })).rejects.toThrow(
        /memory|allocation failed|its thread failed/i,
      );
      expect(Array.from((await hoard.pre(json({ hoard: 1 }), { inline })).tensors.x!.data as Float32Array)[1]).toBe(1);
    }
    expect(process.memoryUsage().rss).toBeLessThan(2 * 2 ** 30);
  });
});

describe('hooks on the calling thread (inline, as a runner runs a lone request)', () => {
  const rows = {
    x: [
      [1, 2, 3, 4],
      [5, 6, 7, 8],
    ],
  };

  it('answers a call that says the pool is idle on this thread, as the threads answer it', async () => {
    const hooks = await pool('echo', { sandbox: true, inline: true });
    for (const inline of [true, false]) {
      const { tensors } = await hooks.pre(json(rows), { inline });
      expect(Array.from(tensors.x!.data as Float32Array)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      const [out] = await hooks.post([{ outputs: y([[1, 2, 3]]), request: json({}) }], { inline });
      if (!out?.ok) throw new Error('post failed');
      // setup ran here too: its state is the same.
      expect(JSON.parse(new TextDecoder().decode(out.body))).toEqual({ y: [[1, 2, 3]], greeting: 'hello' });
    }
    expect(hooks.inlineCalls).toBe(2);
  });

  it("gives post each request's own rows of its batch's output, not the whole batch's memory", async () => {
    const batch = new Float32Array([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const row = (i: number) => ({
      y: { dtype: 'FP32' as const, shape: [1, 3], data: batch.subarray(i * 3, i * 3 + 3) },
    });
    for (const options of [{ inline: true }, {}]) {
      const hooks = await pool('buffer-size', { sandbox: true, inline: true });
      const items = [0, 1, 2].map((i) => ({ outputs: row(i), request: json({}) }));
      const outcomes = await hooks.post(items, options);
      const bodies = outcomes.map((o) => (o.ok ? JSON.parse(new TextDecoder().decode(o.body)) : o.error.message));
      expect(bodies).toEqual([
        { bufferBytes: 12, y: [1, 2, 3] },
        { bufferBytes: 12, y: [4, 5, 6] },
        { bufferBytes: 12, y: [7, 8, 9] },
      ]);
    }
  });

  it("gives post the request's body only when it reads it, after an await too, and never past its call", async () => {
    const hooks = await pool('post-reads', { sandbox: true, inline: true });
    const post = async (request: { body: Uint8Array; contentType: string }, inline: boolean) => {
      const [out] = await hooks.post([{ outputs: y([[1, 2, 3]]), request }], { inline });
      if (!out?.ok) throw new Error(`post failed: ${out?.error.message}`);
      return out;
    };
    const text = (out: { body: Uint8Array }) => JSON.parse(new TextDecoder().decode(out.body)) as unknown;
    for (const inline of [true, false]) {
      expect(text(await post(json({ a: [1, 2] }), inline))).toEqual({ json: { a: [1, 2] } });
      const bin = await post({ body: new Uint8Array([1, 2, 3]), contentType: 'application/octet-stream' }, inline);
      expect([bin.contentType, Array.from(bin.body)]).toEqual(['application/octet-stream', [3, 2, 1]]);
      // A response past SMALL_ARENA_BYTES leaves the isolate by the host's take, not in the answer.
      const large = new Uint8Array(SMALL_ARENA_BYTES + 1001).map((_, i) => i * 7);
      const reversed = Buffer.from(large).reverse(); // (the body moves to a thread)
      const back = await post({ body: large, contentType: 'application/octet-stream' }, inline);
      expect(Buffer.from(back.body).equals(reversed)).toBe(true);
      // A request the hook kept (unread) cannot be read in a later call: its body went with its call.
      await post({ body: new Uint8Array([7]), contentType: 'application/x-keep' }, inline);
      const late = text(await post({ body: new Uint8Array([9]), contentType: 'application/x-late' }, inline));
      expect(late).not.toEqual({ late: [7] });
      expect(late).toEqual({ late: "a request's body can be read only during its own post call" });
    }
  });

  /** `n` pre calls made in one turn, none saying the pool is idle: what each got ('ok' or its error). */
  it('runs on threads when not allowed (no sandbox), or when the deadline is nearer than the limit', async () => {
    const direct = await pool('echo', { inline: true });
    await direct.pre(json(rows), { inline: true });
    expect(direct.inlineCalls).toBe(0);
    const boxed = await pool('echo', { sandbox: true, inline: true, timeoutMs: 5000 });
    await boxed.pre(json(rows), { inline: true, deadline: performance.now() + 1000 });
    expect(boxed.inlineCalls).toBe(0);
  });

  it('stops a looping hook at its limit with the same error, and serves the next call', async () => {
    const loops = await pool('loops', { sandbox: true, inline: true, timeoutMs: 300 });
    await expect(loops.pre(json({ loop: true }), { inline: true })).rejects.toThrow(
      /failed in pre: ran past its 300 ms limit/,
    );
    expect((await loops.pre(json({}), { inline: true })).tensors.x).toBeDefined();
    expect(loops.inlineCalls).toBe(2);
  });

  it('fails only the call whose hook throws, naming the hook and phase, and refuses tensors that do not fit', async () => {
    const throws = await pool('throws', { sandbox: true, inline: true });
    await expect(throws.pre(json({ boom: true }), { inline: true })).rejects.toThrow(
      /hook small\/hook.ts failed in pre: boom in pre/,
    );
    expect((await throws.pre(json({}), { inline: true })).tensors.x).toBeDefined();
    const [out] = await throws.post([{ outputs: y([[1, 2, 3]]), request: json({}) }], { inline: true });
    expect(out).toMatchObject({ ok: false, error: expect.any(HookError) });
    const wrong = await pool('wrong-dtype', { sandbox: true, inline: true });
    await expect(wrong.pre(json(rows), { inline: true })).rejects.toThrow(/dtype|FP32/);
  });

  it('takes tensors a hook builds on SharedArrayBuffers, copied, on threads, in the sandbox and inline', async () => {
    for (const extra of [{}, { sandbox: true }, { sandbox: true, inline: true }]) {
      const hooks = await pool('shared-buffer', extra);
      const inline = { inline: 'inline' in extra };
      const { tensors } = await hooks.pre(json({}), inline);
      expect(tensors.x!.data).toEqual(new Float32Array([1, 2, 3, 4]));
      expect(tensors.x!.data.buffer).toBeInstanceOf(ArrayBuffer);
      const [out, binary] = await hooks.post(
        [
          { outputs: y([[1, 2, 3]]), request: json({}) },
          { outputs: y([[1, 2, 3]]), request: json({ binary: true }) },
        ],
        inline,
      );
      expect(out).toMatchObject({ ok: true });
      expect(binary).toMatchObject({ ok: true, contentType: 'application/octet-stream' });
      if (binary?.ok) expect(new Float32Array(new Uint8Array(binary.body).buffer)).toEqual(new Float32Array([1, 2, 3]));
    }
  });
});
