import { describe, expect, it } from 'vitest';

import {
  packValues,
  randomFunctionBodies,
  randomKserveBodies,
  randomRawInputs,
  rawFromKserveJson,
  splitBodies,
} from './inputs.js';
import { BenchUsageError } from './usage-error.js';

const encode = (text: string) => new TextEncoder().encode(text);
const bytes = (view: ArrayBufferView) => new Uint8Array(view.buffer, view.byteOffset, view.byteLength);

describe('bench inputs', () => {
  it("packs JSON values as the dtype's little-endian elements, as typed arrays lay them out", () => {
    expect(packValues('FP32', [1.5, -2, 0.25])).toEqual(bytes(new Float32Array([1.5, -2, 0.25])));
    expect(packValues('INT64', [3, -1])).toEqual(bytes(new BigInt64Array([3n, -1n])));
    expect(packValues('INT32', [7, 8])).toEqual(bytes(new Int32Array([7, 8])));
    expect(packValues('BOOL', [true, false, true])).toEqual(new Uint8Array([1, 0, 1]));
    // 1.0 in IEEE half precision is 0x3c00.
    expect(packValues('FP16', [1])).toEqual(new Uint8Array([0x00, 0x3c]));
    // Triton's BYTES: a 4-byte little-endian length before each element.
    expect(packValues('BYTES', ['ab'])).toEqual(new Uint8Array([2, 0, 0, 0, 97, 98]));
  });

  it("refuses an input file's values its dtype cannot hold, naming the line and input, rather than sending NaN or 0", () => {
    const body = (data: unknown[]) => ({
      bytes: encode(JSON.stringify({ inputs: [{ name: 'x', shape: [2], datatype: 'INT64', data }] })),
      contentType: 'application/json',
    });
    const inputs = [{ name: 'x', datatype: 'INT64', shape: [2] }];
    expect(() => rawFromKserveJson([body([1, 'two'])], inputs)).toThrow(
      new BenchUsageError('--input-file body 1: input "x": value[1] must be an integer'),
    );
    expect(() => rawFromKserveJson([body([1, 1.5])], inputs)).toThrow(BenchUsageError);
    expect(() => packValues('FP32', ['x'])).toThrow(/must be a number/);
    for (const line of ['null', '3', '[]'])
      expect(() => rawFromKserveJson([{ bytes: encode(line), contentType: 'application/json' }], inputs)).toThrow(
        /body 1: gRPC takes KServe JSON infer requests/,
      );
  });

  it('reads JSON lines as bodies, and anything else as one raw body', () => {
    const lines = splitBodies(encode('{"a":1}\n\n[2]\n'));
    expect(lines.map((b) => new TextDecoder().decode(b.bytes))).toEqual(['{"a":1}', '[2]']);
    expect(lines[0]!.contentType).toBe('application/json');
    const raw = splitBodies(encode('{"a":\n1'));
    expect(raw).toHaveLength(1);
    expect(raw[0]!.contentType).toBe('application/octet-stream');
    expect(splitBodies(new Uint8Array([0xff, 0xd8]), 'image/jpeg')[0]!.contentType).toBe('image/jpeg');
  });

  it('sends a file holding one pretty-printed JSON document as one JSON body, as it is', () => {
    const document = JSON.stringify(
      { inputs: [{ name: 'x', shape: [1, 2], datatype: 'FP32', data: [1, 2] }] },
      null,
      2,
    );
    const file = encode(`${document}\n`);
    const [body, ...rest] = splitBodies(file);
    expect(rest).toHaveLength(0);
    expect(body!.contentType).toBe('application/json');
    expect(JSON.parse(new TextDecoder().decode(body!.bytes))).toEqual(JSON.parse(document));
    expect(body!.bytes).toEqual(file);
    // A content type given is kept.
    expect(splitBodies(file, 'application/vnd+json')[0]!.contentType).toBe('application/vnd+json');
  });

  it.each([
    ['FP32', 'json' as const, [1, 3, 1024, 1024], 'JSON'],
    ['BYTES', 'json' as const, [2, 2 ** 21], 'JSON'],
    ['FP64', 'binary' as const, [2 ** 24], 'binary'],
  ])('refuses random %s inputs whose %s body would pass 64 MiB, naming the input and the size', (datatype, format, shape, word) => {
    const inputs = [
      { name: 'small', datatype: 'FP32', shape: [4] },
      { name: 'big', datatype, shape },
    ];
    const make = () => (format === 'json' ? randomFunctionBodies(inputs) : randomRawInputs(inputs));
    expect(make).toThrow(BenchUsageError);
    expect(make).toThrow(new RegExp(`${word} body of about \\d+ bytes \\(input "big", ${datatype} \\[`));
    if (format === 'json') expect(() => randomKserveBodies(inputs, 'json')).toThrow('input "big"');
  });

  it('refuses by the encoded size: FP32 [3, 1024, 1024] is 12 MiB raw but about 75 MiB as JSON', () => {
    const inputs = [{ name: 'x', datatype: 'FP32', shape: [-1, 3, 1024, 1024] }];
    expect(() => randomKserveBodies(inputs, 'json')).toThrow(BenchUsageError);
    expect(() => randomFunctionBodies(inputs)).toThrow('input "x", FP32 [1, 3, 1024, 1024]');
    expect(randomFunctionBodies([{ name: 'x', datatype: 'FP32', shape: [1, 4] }])).toHaveLength(8);
  });

  it("turns KServe JSON requests into ModelInfer's tensors in the model's input order", () => {
    const [request] = rawFromKserveJson(
      [
        {
          bytes: encode(
            JSON.stringify({
              inputs: [
                { name: 'b', shape: [1], datatype: 'INT64', data: [5] },
                { name: 'a', shape: [1, 2], datatype: 'FP32', data: [[1, 2]] },
              ],
            }),
          ),
          contentType: 'application/json',
        },
      ],
      [
        { name: 'a', datatype: 'FP32', shape: [-1, 2] },
        { name: 'b', datatype: 'INT64', shape: [1] },
      ],
    );
    expect(request!.shapes).toEqual([[1, 2], [1]]);
    expect(request!.raw).toEqual([bytes(new Float32Array([1, 2])), bytes(new BigInt64Array([5n]))]);
    expect(() =>
      rawFromKserveJson(
        [{ bytes: encode('{"inputs": []}'), contentType: 'application/json' }],
        [{ name: 'a', datatype: 'FP32', shape: [2] }],
      ),
    ).toThrow(BenchUsageError);
  });
});
