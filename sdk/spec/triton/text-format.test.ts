import { describe, expect, it } from 'vitest';

import { parseTextFormat, TextFormatError } from './text-format.js';

describe('protobuf text format', () => {
  it('reads scalars, enums, nested messages, lists of messages and comments', () => {
    const m = parseTextFormat(`
      # a comment
      name: "resnet" 'x'   # adjacent strings concatenate
      max_batch_size: 8
      ratio: -1.5e2
      input [ { name: "a" dims: [ 3, -1 ] }, { name: "b" data_type: TYPE_FP32 } ]
      dynamic_batching { preferred_batch_size: [ 4, 8 ] }
      ok: true;
      policy: < kind: KIND_GPU >
    `);
    expect(m.name).toEqual(['resnetx']);
    expect(m.max_batch_size).toEqual([8]);
    expect(m.ratio).toEqual([-150]);
    expect(m.input).toEqual([
      { name: ['a'], dims: [3, -1] },
      { name: ['b'], data_type: [{ enum: 'TYPE_FP32' }] },
    ]);
    expect(m.dynamic_batching).toEqual([{ preferred_batch_size: [4, 8] }]);
    expect(m.ok).toEqual([true]);
    expect(m.policy).toEqual([{ kind: [{ enum: 'KIND_GPU' }] }]);
  });

  it('reads repeated fields written one at a time the same as a list', () => {
    expect(parseTextFormat('dims: 3 dims: 224').dims).toEqual(parseTextFormat('dims: [3, 224]').dims);
  });

  it('says where it fails', () => {
    expect(() => parseTextFormat('input [ { name: "a" }')).toThrow(TextFormatError);
    expect(() => parseTextFormat('name: "a\n"')).toThrow(/line 1: unterminated string/);
    expect(() => parseTextFormat('a: 1\nb 2')).toThrow(/line 2: expected ":" or "\{" after b/);
    expect(() => parseTextFormat('a: @')).toThrow(/unexpected character/);
  });
});
