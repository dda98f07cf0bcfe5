/**
 * The addon's KServe JSON parser against the reference it stands in for: JSON.parse of the same
 * bytes, with each `inputs[i].data` of numbers flattened. Documents are generated (numbers in every
 * JSON form, escapes, unicode, nesting, duplicate keys) and hand-picked where simdjson and V8 part.
 */
import { describe, expect, it } from 'vitest';

import { native } from '../../../runtime/engine/binding.js';
import { parseInferJson, parseInferJsonAsync } from '../../../runtime/engine/index.js';
import { InvalidInputError } from '../../../sdk/errors.js';
import { flatten } from '../../../sdk/tensor-json.js';
import { rng } from '../../helpers/random.js';

const encode = (s: string): Uint8Array => new TextEncoder().encode(s);

/**
 * `inputs[i].data` of numbers (at least one) as a Float64Array: the reference is JSON.parse's value
 * packed so, and the parser's value is packed too, since where simdjson declines a body, the
 * JSON.parse that reads it instead packs nothing (both forms are what platform/http/kserve-body.ts takes).
 */
function packed(input: unknown): unknown {
  const value = input as { inputs?: { data?: unknown }[] };
  if (value === null || typeof value !== 'object' || !Array.isArray(value.inputs)) return value;
  for (const input of value.inputs) {
    if (input === null || typeof input !== 'object' || !Array.isArray(input.data)) continue;
    const leaves = flatten(input.data);
    if (leaves.length > 0 && leaves.every((v) => typeof v === 'number'))
      input.data = Float64Array.from(leaves as number[]);
  }
  return value;
}

/** Deep equality that tells -0 from 0 and a Float64Array from an array, and checks key order. */
function same(a: unknown, b: unknown, path = '$'): void {
  if (typeof a === 'number' || typeof b === 'number') {
    if (!Object.is(a, b)) throw new Error(`${path}: ${String(a)} ≠ ${String(b)}`);
    return;
  }
  if (a instanceof Float64Array || b instanceof Float64Array) {
    if (!(a instanceof Float64Array && b instanceof Float64Array) || a.length !== b.length)
      throw new Error(`${path}: packed data differs in kind or length`);
    for (let i = 0; i < a.length; i++) same(a[i], b[i], `${path}[${i}]`);
    return;
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) throw new Error(`${path}: arrays differ`);
    for (let i = 0; i < a.length; i++) same(a[i], b[i], `${path}[${i}]`);
    return;
  }
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') {
    expect(Object.getPrototypeOf(a), path).toBe(Object.getPrototypeOf(b));
    const ka = Object.keys(a);
    if (ka.join('\u0001') !== Object.keys(b).join('\u0001')) throw new Error(`${path}: keys differ`);
    for (const k of ka) same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`);
    return;
  }
  if (a !== b) throw new Error(`${path}: ${JSON.stringify(a)} ≠ ${JSON.stringify(b)}`);
}

/** The addon's parse, or JSON.parse where it declines (what parseInferJson does past 1 KB). */
function nativeParse(text: string): unknown {
  const value = native().parseInferJson!(encode(text));
  return value === undefined ? JSON.parse(text) : value;
}

const check = (text: string): void => same(packed(nativeParse(text)), packed(JSON.parse(text)));

const NUMBERS = [
  '0',
  '-0.0',
  '1',
  '-1',
  '3.25',
  '1e3',
  '-2.5E-7',
  '1.7976931348623157e308',
  '5e-324',
  '4.9e-324',
  '9007199254740993',
  '-9223372036854775808',
  '18446744073709551615',
  '0.1',
  '123456789.123456789e-5',
  '2.2250738585072011e-308',
  '1E+2',
  '0e0',
];
const STRINGS = ['""', '"a"', '"é中😀"', '"\\u00e9\\n\\t\\"\\\\\\/"', '"\\ud83d\\ude00"', '"\\u0000"', '"data"'];

function value(next: () => number, depth: number): string {
  const r = next();
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  if (depth > 3 || r < 0.35) return pick(NUMBERS);
  if (r < 0.5) return pick(STRINGS);
  if (r < 0.55) return pick(['true', 'false', 'null']);
  if (r < 0.8) return `[${Array.from({ length: Math.floor(next() * 4) }, () => value(next, depth + 1)).join(',')}]`;
  const keys = Array.from({ length: Math.floor(next() * 4) }, () => pick(['"a"', '"data"', '"inputs"', '"b"', '"a"']));
  return `{${keys.map((k) => `${k}:${value(next, depth + 1)}`).join(', ')}}`;
}

describe('parseInferJson (simdjson) reads a body as JSON.parse does', () => {
  it('is built with simdjson here (the fast path these tests are about)', () => {
    expect(typeof native().parseInferJson).toBe('function');
  });

  it('packs each input of numbers, nested or flat, into one Float64Array of its leaves', () => {
    const parsed = nativeParse(
      '{"id":"7","inputs":[{"name":"x","datatype":"FP32","shape":[2,2],"data":[[1,2.5],[-3e2,4]]},' +
        '{"name":"s","datatype":"BYTES","shape":[1],"data":["a"]},{"name":"e","data":[]},{"name":"m","data":[1,"2"]}]}',
    ) as { inputs: { data: unknown }[] };
    expect(parsed.inputs[0]!.data).toEqual(new Float64Array([1, 2.5, -300, 4]));
    // Under 1 KB, parseInferJson leaves a body to JSON.parse, which is quicker there.
    const small = parseInferJson(encode('{"inputs":[{"data":[1,2]}]}')) as { inputs: { data: unknown }[] };
    expect(small.inputs[0]!.data).toEqual([1, 2]);
    expect(parsed.inputs[1]!.data).toEqual(['a']); // strings stay as they are
    expect(parsed.inputs[2]!.data).toEqual([]); // no numbers: nothing to pack
    expect(parsed.inputs[3]!.data).toEqual([1, '2']); // not all numbers: left for the tensor's own error
  });

  it('packs only inputs[i].data of the top-level object', () => {
    check(
      '{"parameters":{"data":[1,2]},"outputs":[{"name":"y","data":[1]}],"inputs":[{"parameters":{"data":[3]},"data":[4]}]}',
    );
    check('[{"inputs":[{"data":[1]}]}]');
    check('{"inputs":{"data":[1]}}');
  });

  it('agrees with JSON.parse where the two parsers part: -0, lone surrogates, __proto__, huge numbers, duplicates', () => {
    for (const text of [
      '{"inputs":[{"data":[-0, 1]}]}',
      '-0',
      '[-0.0, -0e1]',
      '"\\ud800"',
      '{"__proto__":{"polluted":true},"inputs":[]}',
      '123456789012345678901234567890',
      '1e400',
      '{"a":1,"a":2,"b":3,"a":4}',
      '  \n{"inputs" : [ { "data" : [ 1 , [ 2 ] ] } ] }\t',
    ])
      check(text);
  });

  it('throws JSON.parse’s SyntaxError for a body that is not JSON', () => {
    for (const text of ['', '{', '[1,]', '{"a":1}x', 'nul', '"\\x"', '\u00ff']) {
      expect(() => parseInferJson(encode(text)), text).toThrow(SyntaxError);
    }
    // Bytes that are not UTF-8 in a string: both decode them as U+FFFD or refuse alike.
    const bad = new Uint8Array([0x22, 0xff, 0xfe, 0x22]);
    expect(() => parseInferJson(bad)).not.toThrow();
    same(parseInferJson(bad), JSON.parse(new TextDecoder().decode(bad)));
  });

  it('refuses a body nested deeper than 1024 levels as invalid input, never handing it to JSON.parse', async () => {
    // 4 MB of "[": JSON.parse would read it, on the event loop, for seconds.
    const deep = encode(`${'['.repeat(2 * 2 ** 20)}${']'.repeat(2 * 2 ** 20)}`);
    const t0 = performance.now();
    expect(() => parseInferJson(deep)).toThrow(InvalidInputError);
    await expect(parseInferJsonAsync(deep)).rejects.toThrow(/nested deeper than 1024 levels/);
    expect(performance.now() - t0).toBeLessThan(5000);
    // Just under the limit it still parses.
    const limit = `${'['.repeat(1000)}1${']'.repeat(1000)}`;
    same(parseInferJson(encode(limit)), JSON.parse(limit));
  });

  it('matches JSON.parse on 2,000 generated documents', () => {
    const next = rng(20261201);
    for (let i = 0; i < 2000; i++) {
      const text = `{"inputs":[{"name":"x","data":${value(next, 1)}},${value(next, 1)}],"other":${value(next, 0)}}`;
      check(text);
    }
  });

  it('reads a 1×3×224×224 image body to the same doubles, on the event loop and off it', async () => {
    const next = rng(7);
    const data = Array.from({ length: 3 * 224 * 224 }, () => next() * 2 - 1);
    const text = JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 3, 224, 224], data }] });
    const parsed = parseInferJson(encode(text)) as { inputs: { data: Float64Array }[] };
    expect(parsed.inputs[0]!.data).toEqual(Float64Array.from(data));
    // Off the loop: eight at once (each its own parser), the same value as the parse on it.
    const all = await Promise.all(Array.from({ length: 8 }, () => parseInferJsonAsync(encode(text))));
    for (const value of all) same(value, parsed);
  });

  it('off the loop, leaves a large body it could read differently to JSON.parse, and rejects one that is not JSON', async () => {
    const big = (tail: string) =>
      `{"inputs":[{"name":"x","data":[${Array.from({ length: 40_000 }, (_, i) => i / 7).join(',')}]}]${tail}`;
    expect(big('}').length).toBeGreaterThan(256 * 1024); // past OFF_LOOP_FROM
    for (const text of [big('}'), big(',"z":-0}'), big(',"__proto__":{"a":1}}')])
      same(packed(await parseInferJsonAsync(encode(text))), packed(JSON.parse(text)));
    await expect(parseInferJsonAsync(encode(big(',}')))).rejects.toThrow(SyntaxError);
  });
});
