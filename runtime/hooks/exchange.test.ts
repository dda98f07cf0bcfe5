import { describe, expect, it } from 'vitest';

import { bodyIn, EXCHANGE_MIN_BYTES, Exchange, inputBytes, placeTensors } from './exchange.js';

const big = EXCHANGE_MIN_BYTES;

describe('a hook pool exchange', () => {
  it("sizes a request's slot by its body and the spec's fixed inputs, and gives none where both are small", () => {
    expect(inputBytes([{ dtype: 'FP32', dims: [3, 224, 224] }])).toBe(602_112);
    expect(inputBytes([{ dtype: 'FP32', dims: [-1, 4] }])).toBe(0);
    const small = new Exchange(4 * big, 0);
    expect(small.place(new Uint8Array(100))).toBeUndefined();
    const body = new Uint8Array(big).map((_, i) => i % 251);
    const { slot } = small.place(body)!;
    expect(slot).toEqual({ at: 0, size: big, body: big });
    expect(Buffer.from(bodyIn(small.buffer, slot)).equals(Buffer.from(body))).toBe(true);
    // Room for the tensors alone where the inputs are large and the body is not.
    const sized = new Exchange(4 * big, 2 * big);
    expect(sized.place(new Uint8Array(10))?.slot).toEqual({ at: 0, size: 2 * big, body: -1 });
    // Full: none (the request travels as before).
    expect(sized.place(new Uint8Array(10))?.slot).toEqual({ at: 2 * big, size: 2 * big, body: -1 });
    expect(sized.place(new Uint8Array(10))).toBeUndefined();
  });

  it('frees a slot when its last holder lets it go, each hold let go once', () => {
    const exchange = new Exchange(4 * big, 0);
    const { slot, hold } = exchange.place(new Uint8Array(big))!;
    const task = exchange.holdEach([slot]);
    const forward = hold.again()!;
    hold.letGo();
    hold.letGo(); // a second letting go frees nothing more
    expect(hold.held).toBe(false);
    expect(hold.again()).toBeUndefined();
    task.letGo();
    expect(exchange.used).toBe(big);
    forward();
    expect(exchange.used).toBe(0);
  });

  it('places large tensors in the slot while they fit, and reads back only views inside it', () => {
    const exchange = new Exchange(8 * big, 0);
    const { slot } = exchange.place(new Uint8Array(3 * big))!;
    const a = new Float32Array(big / 4).fill(1.5);
    const b = new Float64Array(big / 8).fill(-2);
    const c = new Float32Array(big / 4).fill(3);
    const small = new Int32Array(4).fill(9);
    const { tensors, placed } = placeTensors(
      exchange.buffer,
      slot,
      {
        a: { dtype: 'FP32', shape: [a.length], data: a },
        small: { dtype: 'INT32', shape: [4], data: small },
        b: { dtype: 'FP64', shape: [b.length], data: b },
        c: { dtype: 'FP32', shape: [c.length], data: c },
      },
      true,
    );
    // a and b fill two thirds; c fits the last third; small stays as it is.
    expect(Object.keys(placed!)).toEqual(['a', 'b', 'c']);
    expect(tensors.small!.data).toBe(small);
    const back = exchange.views(tensors, placed, slot);
    expect(Array.from(back.a!.data as Float32Array).every((v) => v === 1.5)).toBe(true);
    expect(back.b!.data).toBeInstanceOf(Float64Array);
    expect(Array.from(back.b!.data as Float64Array).every((v) => v === -2)).toBe(true);
    expect(Array.from(back.c!.data as Float32Array).every((v) => v === 3)).toBe(true);
    // A placement outside the slot, or misaligned, is refused.
    expect(() => exchange.views(tensors, { a: [slot.at + slot.size, 4] }, slot)).toThrow(/outside its request's slot/);
    expect(() => exchange.views(tensors, { b: [slot.at + 4, 2] }, slot)).toThrow(/outside its request's slot/);
  });
});
