/**
 * A runner's hook pool and its threads share an exchange (runtime/hooks/exchange.ts): large bodies
 * go to a thread there, and the large tensors pre makes come back there, each request's in its own
 * slot, freed once both the task and the request are done with it.
 */
import { describe, expect, it } from 'vitest';

import type { PreOutcome } from '../../../runtime/hooks/index.js';
import { DeadlineExceededError } from '../../../sdk/errors.js';
import { parseSpec } from '../../../sdk/spec/index.js';
import { SMALL_SPEC } from '../../helpers/specs.js';
import { json, pool } from './hook-pools.js';

const N = 32_768; // floats a request: 128 KiB, past the exchange's 64 KiB floor
const spec = parseSpec({ ...SMALL_SPEC, hook: 'hook.ts', inputs: [{ name: 'x', dtype: 'FP32', dims: [N] }] });
const floats = (seed: number) => Float32Array.from({ length: N }, (_, i) => Math.sin(seed * 1000 + i));
const binary = (seed: number) => ({
  body: new Uint8Array(floats(seed).buffer),
  contentType: 'application/octet-stream',
});

describe("a runner's hook pool's exchange with its threads", () => {
  it('sends large bodies to the threads and takes their tensors back in slots, each freed when let go', async () => {
    const hooks = await pool('exchange', { sandbox: true, inline: true, threads: 2, spec });
    // Large bodies (in their slots), small JSON asks (a slot for the tensor alone), on the threads.
    const asks = [binary(1), json({ fill: 2, n: N }), binary(3), json({ fill: 4, n: N }), binary(5)];
    const sent = asks.map((r) => Buffer.from(r.body)); // copies: a small body moves to the thread
    const pres: PreOutcome[] = [];
    for (const r of asks) pres.push(await hooks.pre(r, {})); // each alone in its task (a group's: below)
    const expected = [floats(1), new Float32Array(N).fill(2), floats(3), new Float32Array(N).fill(4), floats(5)];
    pres.forEach((r, i) => {
      const x = r.tensors.x!.data as Float32Array;
      expect(x.buffer).toBeInstanceOf(SharedArrayBuffer); // where the thread placed it
      expect(Buffer.from(x.buffer, x.byteOffset, x.byteLength).equals(Buffer.from(expected[i]!.buffer))).toBe(true);
      // post sees the caller's own body, byte for byte.
      expect(Buffer.from(r.body).equals(sent[i]!)).toBe(true);
    });
    expect(hooks.threadTasks).toBeGreaterThan(1);
    expect(hooks.exchangeUsed).toBeGreaterThanOrEqual(5 * N * 4);
    // A forward's hold keeps a slot past its request's release; none is had once it is let go.
    const forward = pres[0]!.hold!()!;
    for (const r of pres) r.release!();
    pres[0]!.release!(); // a second release of one slot frees nothing else
    expect(hooks.exchangeUsed).toBe(N * 4);
    expect(pres[1]!.hold!()).toBeUndefined();
    forward();
    forward();
    expect(hooks.exchangeUsed).toBe(0);
  });

  it('reads a large JSON body where it lies, and fails only the request whose JSON is broken', async () => {
    const hooks = await pool('exchange', { sandbox: true, inline: true, threads: 2, spec });
    const pad = 'x'.repeat(80_000); // past the exchange's floor: the body goes in a slot
    const text = (s: string) => ({ body: new TextEncoder().encode(s), contentType: 'application/json' });
    const [good, broken] = await Promise.allSettled([
      hooks.pre(text(JSON.stringify({ fill: 6, n: N, pad })), {}),
      hooks.pre(text(`{"fill": 6, "n": ${N}, "pad": "${pad}`), {}),
    ]);
    const x = (good as PromiseFulfilledResult<PreOutcome>).value.tensors.x!.data as Float32Array;
    expect(x.length === N && x.every((v) => v === 6)).toBe(true);
    expect(String((broken as PromiseRejectedResult).reason)).toMatch(/not valid JSON/);
    (good as PromiseFulfilledResult<PreOutcome>).value.release!();
    expect(hooks.exchangeUsed).toBe(0);
  });

  it("leaves a group's bodies in their slots, their tensors moved back, so each can run again alone", async () => {
    const hooks = await pool('exchange', { sandbox: true, inline: true, threads: 1, spec });
    // One request holds the only thread; the three after it go to it together, in one task.
    const first = hooks.pre(json({ fill: 0, n: N, spinMs: 200 }), {});
    const group = await Promise.all([11, 12, 13].map((seed) => hooks.pre(binary(seed), {})));
    await first;
    group.forEach((r, i) => {
      const x = r.tensors.x!.data as Float32Array;
      expect(x.buffer).toBeInstanceOf(ArrayBuffer);
      expect(Buffer.from(x.buffer, x.byteOffset, x.byteLength).equals(Buffer.from(floats(11 + i).buffer))).toBe(true);
    });
  });

  it('holds a slot until its task has ended on the thread, though its caller was answered first', async () => {
    const hooks = await pool('exchange', { sandbox: true, inline: true, threads: 1, spec });
    const before = hooks.threadTasks;
    const late = hooks.pre(json({ fill: 1, n: N, spinMs: 600 }), { deadline: performance.now() + 50 });
    await expect(late).rejects.toBeInstanceOf(DeadlineExceededError);
    // While the task runs on, its slot is still given out: the thread writes the tensor there.
    if (hooks.threadTasks === before) expect(hooks.exchangeUsed).toBeGreaterThan(0);
    await expect.poll(() => hooks.threadTasks, { timeout: 30_000 }).toBeGreaterThan(before);
    await expect.poll(() => hooks.exchangeUsed, { timeout: 30_000 }).toBe(0);
    // The pool goes on: a request after it gets its own tensor.
    const next = await hooks.pre(binary(7), {});
    expect(Array.from((next.tensors.x!.data as Float32Array).subarray(0, 3))).toEqual(
      Array.from(floats(7).subarray(0, 3)),
    );
    next.release!();
    expect(hooks.exchangeUsed).toBe(0);
  });
});
