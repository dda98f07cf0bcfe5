import { describe, expect, it } from 'vitest';

import { Exchange } from '../hooks/index.js';
import type { Pending } from './pending.js';
import { heldInputs } from './pending.js';

const KB = 1024;

/** A request whose x lies in `exchange`, as a hook thread placed it, and its hold (PreOutcome.hold). */
function inExchange(exchange: Exchange, fill: number) {
  const { slot, hold } = exchange.place(new Uint8Array(64 * KB).fill(1))!;
  const x = new Float32Array(exchange.buffer, slot.at, (64 * KB) / 4).fill(fill);
  const ids = new Int32Array([fill]);
  const pending = {
    tensors: { x: { dtype: 'FP32', shape: [1, x.length], data: x }, id: { dtype: 'INT32', shape: [1], data: ids } },
    hold: hold.again,
  } as unknown as Pending;
  return { pending, release: hold.letGo };
}

describe("a batch's inputs in the hook pool's exchange", () => {
  it('holds each where it lies until the forward ends, and runs one whose place was let go on zeros', () => {
    const exchange = new Exchange(1024 * KB, 0);
    const a = inExchange(exchange, 2);
    const b = inExchange(exchange, 3);
    const raw = { tensors: { x: { dtype: 'FP32', shape: [1, 1], data: new Float32Array([5]) } } } as unknown as Pending;
    b.release(); // b's caller was answered (its deadline) before the batch ran
    const { inputs, letGo } = heldInputs([a.pending, b.pending, raw]);
    expect(inputs[0]).toBe(a.pending.tensors);
    expect(inputs[2]).toBe(raw.tensors);
    // b's x is zeros of its own; its tensors that were its own stay.
    expect(inputs[1]!.x!.data.buffer).toBeInstanceOf(ArrayBuffer);
    expect(Array.from(inputs[1]!.x!.data as Float32Array).every((v) => v === 0)).toBe(true);
    expect(inputs[1]!.id).toBe(b.pending.tensors.id);
    // a's caller is answered mid-forward: its place stays given out until the forward ends.
    a.release();
    expect(exchange.used).toBe(64 * KB);
    letGo();
    letGo();
    expect(exchange.used).toBe(0);
  });
});
