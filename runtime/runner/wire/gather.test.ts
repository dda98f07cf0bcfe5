// The node's gathering of one turn's infer requests into calls, against a runner stand-in that
// answers each call with its input doubled (computed from the parts it was sent, so a part missing,
// doubled or out of order would answer some caller with another's rows).
import { describe, expect, it } from 'vitest';

import { CancelledError, InferenceError, UnavailableError } from '../../../sdk/errors.js';
import { FunctionSpecSchema } from '../../../sdk/spec/function-spec.js';
import type { TensorsByName } from '../../../sdk/tensor.js';
import type { CallOptions } from '../../pool/index.js';
import type { OutBlob } from './channel.js';
import type { Target } from './gather.js';
import { Gatherer } from './gather.js';
import type { WireTensors } from './protocol.js';

const spec = (over: Record<string, unknown> = {}) =>
  FunctionSpecSchema.parse({
    name: 'f',
    model: 'model.pt',
    maxBatchSize: 8,
    inputs: [{ name: 'x', dtype: 'FP32', dims: [-1] }],
    outputs: [{ name: 'y', dtype: 'FP32', dims: [-1] }],
    ...over,
  });

interface Sent {
  wire: WireTensors;
  options: CallOptions;
}

/** A runner stand-in: each call's `x` (its parts joined) comes back doubled as `y`, or `answer` decides. */
function target(answer?: (sent: Sent) => Promise<TensorsByName>): Target & { calls: Sent[]; flushes: number } {
  const t = {
    calls: [] as Sent[],
    flushes: 0,
    send(wire: WireTensors, blobs: OutBlob[], options: CallOptions): Promise<TensorsByName> {
      const sent = { wire, options };
      t.calls.push(sent);
      if (answer) return answer(sent);
      const parts = blobs[wire.x!.blob]!;
      const bytes = Buffer.concat(parts instanceof Uint8Array ? [parts] : [...parts]);
      const x = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
      return Promise.resolve({ y: { dtype: 'FP32', shape: wire.x!.shape, data: x.map((v) => v * 2) } });
    },
    flush() {
      t.flushes++;
    },
  };
  return t;
}

const rowsOf = (i: number, rows: number, width = 3): TensorsByName => ({
  x: { dtype: 'FP32', shape: [rows, width], data: Float32Array.from({ length: rows * width }, (_, k) => i * 100 + k) },
});

describe('Gatherer: one call for the infer requests of a turn', () => {
  it("sends a turn's requests as one call of all their rows and answers each with its own", async () => {
    const g = new Gatherer(spec());
    const t = target();
    const answers = [1, 2, 1].map((rows, i) => g.take(rowsOf(i, rows), {}, t)!);
    expect(g.empty).toBe(false);
    const got = await Promise.all(answers);
    expect(t.calls).toHaveLength(1);
    expect(t.calls[0]!.wire.x!.shape).toEqual([4, 3]);
    expect(t.calls[0]!.options.requests).toBe(3);
    expect(t.flushes).toBe(1);
    got.forEach((out, i) => {
      const want = rowsOf(i, [1, 2, 1][i]!).x!;
      expect(out.y!.shape).toEqual(want.shape);
      expect([...out.y!.data]).toEqual([...want.data].map((v) => Number(v) * 2));
    });
    expect(g.empty).toBe(true);
  });

  it('keeps apart requests of other inner shapes or priorities, and cuts calls at maxBatchSize rows', async () => {
    const g = new Gatherer(spec({ batching: { priorityLevels: 2 } }));
    const t = target();
    await Promise.all([
      g.take(rowsOf(0, 5), {}, t),
      g.take(rowsOf(1, 2, 4), {}, t),
      g.take(rowsOf(2, 2), { priority: 2 }, t),
      g.take(rowsOf(3, 3), {}, t), // 5 + 3 = 8 rows: one call
      g.take(rowsOf(4, 1), {}, t), // past 8: the next
    ]);
    const calls = t.calls.map((c) => ({ shape: c.wire.x!.shape, requests: c.options.requests, p: c.options.priority }));
    expect(calls).toEqual([
      { shape: [8, 3], requests: 2, p: undefined },
      { shape: [1, 3], requests: 1, p: undefined },
      { shape: [2, 4], requests: 1, p: undefined },
      { shape: [2, 3], requests: 1, p: 2 },
    ]);
  });

  it('leaves alone what it cannot gather', () => {
    const t = target();
    const g = new Gatherer(spec());
    expect(g.take(rowsOf(0, 8), {}, t)).toBeUndefined(); // maxBatchSize rows already
    expect(g.take(rowsOf(0, 1), { deadline: performance.now() + 1000 }, t)).toBeUndefined();
    expect(g.take(rowsOf(0, 1), { sequence: { id: 'a', start: true, end: false } }, t)).toBeUndefined();
    expect(g.take({ z: rowsOf(0, 1).x! }, {}, t)).toBeUndefined(); // fails the spec's checks: its own error
    const aborted = new AbortController();
    aborted.abort();
    expect(g.take(rowsOf(0, 1), { signal: aborted.signal }, t)).toBeUndefined();
    for (const other of [
      spec({ maxBatchSize: 1 }),
      spec({ maxBatchSize: 0, inputs: [{ name: 'x', dtype: 'FP32', dims: [1, 3] }] }),
      spec({ inputs: [{ name: 'x', dtype: 'BYTES', dims: [1] }] }),
      spec({ outputs: [{ name: 'y', dtype: 'BYTES', dims: [1] }] }),
    ])
      expect(new Gatherer(other).take(rowsOf(0, 1), {}, t)).toBeUndefined();
    expect(g.empty).toBe(true);
    expect(t.calls).toHaveLength(0);
  });

  it('answers a caller that goes away at once, the others when the call does; all gone, it cancels the call', async () => {
    let release: (out: TensorsByName) => void = () => undefined;
    const t = target(
      () =>
        new Promise((resolve) => {
          release = resolve;
        }),
    );
    const g = new Gatherer(spec());
    const leaving = new AbortController();
    const first = g.take(rowsOf(0, 1), { signal: leaving.signal }, t)!;
    const second = g.take(rowsOf(1, 1), {}, t)!;
    await new Promise((r) => setImmediate(r));
    leaving.abort();
    await expect(first).rejects.toBeInstanceOf(CancelledError);
    expect(t.calls[0]!.options.signal!.aborted).toBe(false);
    release({ y: { dtype: 'FP32', shape: [2, 3], data: new Float32Array(6).fill(7) } });
    expect((await second).y!.shape).toEqual([1, 3]);

    const both = [new AbortController(), new AbortController()];
    const gone = both.map((c, i) => g.take(rowsOf(i, 1), { signal: c.signal }, t)!);
    await new Promise((r) => setImmediate(r));
    for (const c of both) c.abort();
    await Promise.all(gone.map((p) => expect(p).rejects.toBeInstanceOf(CancelledError)));
    expect(t.calls[1]!.options.signal!.aborted).toBe(true);
  });

  it("fails every caller with the call's error, and with a clear one when outputs do not hold the call's rows", async () => {
    const down = new UnavailableError('the runner ended');
    const failing = target(() => Promise.reject(down));
    const g = new Gatherer(spec());
    const failed = [g.take(rowsOf(0, 1), {}, failing)!, g.take(rowsOf(1, 2), {}, failing)!];
    for (const p of failed) await expect(p).rejects.toBe(down);

    const short = target(() =>
      Promise.resolve({ y: { dtype: 'FP32', shape: [2, 3], data: new Float32Array(6) } } as TensorsByName),
    );
    const cut = [g.take(rowsOf(0, 1), {}, short)!, g.take(rowsOf(1, 2), {}, short)!];
    for (const p of cut) await expect(p).rejects.toThrow(InferenceError);
    await expect(cut[0]).rejects.toThrow('output "y" has 2 rows for a batch of 3');

    // A runner that answers strings where the spec says FP32: refused, not cut by byte offsets.
    const strings = target(() =>
      Promise.resolve({ y: { dtype: 'BYTES', shape: [3], data: new Uint8Array(15) } } as TensorsByName),
    );
    const lied = [g.take(rowsOf(0, 1), {}, strings)!, g.take(rowsOf(1, 2), {}, strings)!];
    for (const p of lied) await expect(p).rejects.toThrow(/output "y" is BYTES/);
  });

  it('gathers calls for one runner only: another target starts another call', async () => {
    const a = target();
    const b = target();
    const g = new Gatherer(spec());
    await Promise.all([g.take(rowsOf(0, 1), {}, a), g.take(rowsOf(1, 1), {}, b), g.take(rowsOf(2, 1), {}, a)]);
    expect(a.calls.map((c) => c.options.requests)).toEqual([1, 1]);
    expect(b.calls.map((c) => c.options.requests)).toEqual([1]);
  });
});
