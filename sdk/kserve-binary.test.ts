import { describe, expect, it } from 'vitest';

import { InvalidInputError } from './errors.js';
import { BinaryBody, encodeBinary } from './kserve-binary.js';
import { bytesOf } from './tensor.js';

describe('Triton binary tensor data: one codec for both sides', () => {
  it("reads back what it wrote: the header, then each tensor's bytes in order", () => {
    const a = new Float32Array([1, 2, 3]);
    const b = new Int32Array([7]);
    const header = {
      inputs: [
        { name: 'a', parameters: { binary_data_size: 12 } },
        { name: 'b', parameters: { binary_data_size: 4 } },
      ],
    };
    const { body, headerLength } = encodeBinary(header, [bytesOf(a), bytesOf(b)]);
    expect(body.byteLength).toBe(headerLength + 16);
    const read = new BinaryBody(body, headerLength, 'the request');
    expect(read.header).toEqual(header);
    expect(Array.from(new Float32Array(read.take(12, 'input "a"').slice().buffer))).toEqual([1, 2, 3]);
    expect(Array.from(new Int32Array(read.take(4, 'input "b"').slice().buffer))).toEqual([7]);
    expect(() => read.end('inputs')).not.toThrow();
  });

  it('refuses a header length past the body, a tail too short or too long, and a header that is not JSON', () => {
    const { body, headerLength } = encodeBinary({ x: 1 }, [new Uint8Array(8)]);
    expect(() => new BinaryBody(body, body.byteLength + 1, 'the request')).toThrow(/does not fit a body/);
    const short = new BinaryBody(body, headerLength, 'the request');
    expect(() => short.take(9, 'input "x"')).toThrow(/input "x": the body ends before its 9 bytes/);
    const long = new BinaryBody(body, headerLength, 'the request');
    long.take(4, 'input "x"');
    expect(() => long.end('inputs')).toThrow(/4 bytes past the inputs' binary data/);
    expect(() => new BinaryBody(new TextEncoder().encode('{nope'), undefined, 'the request')).toThrow(
      InvalidInputError,
    );
  });

  it('reads a body without a header length as JSON alone', () => {
    const read = new BinaryBody(new TextEncoder().encode('{"inputs":[]}'), undefined, 'the request');
    expect(read.binary).toBe(false);
    expect(read.header).toEqual({ inputs: [] });
  });
});
