/**
 * Tensors to and from JSON's nested arrays, for the default hook and for hooks that take JSON.
 * FP16 and BF16 are converted from and to numbers; INT64 and UINT64 accept numbers or strings and
 * return numbers when they are safe integers, else strings.
 */

import { InvalidInputError } from './errors.js';
import type { TensorSpec } from './spec/function-spec.js';
import type { DType, Tensor, TypedArrayFor } from './tensor.js';
import { allocate, numel } from './tensor.js';

/** Deepest nesting of lists flatten() reads (a tensor has far fewer dimensions; Triton allows 64). */
const MAX_NESTING = 64;

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function floatToHalf(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    if ((mant >>> (shift - 1)) & 1 && (mant & ((1 << (shift - 1)) - 1) || half & 1)) half++;
    return sign | half;
  }
  let half = sign | (e << 10) | (mant >>> 13);
  if (mant & 0x1000 && mant & 0x2fff) half++; // round to nearest even
  return half;
}

export function halfToFloat(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 10) & 0x1f;
  const mant = bits & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

export function floatToBFloat16(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  if ((x & 0x7f800000) === 0x7f800000 && x & 0x7fffff) return (x >>> 16) | 0x40;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

export function bfloat16ToFloat(bits: number): number {
  u32[0] = bits << 16;
  return f32[0]!;
}

/** The shape of a rectangular nested array; throws if it is ragged. */
export function nestedShape(value: unknown, where = 'value'): number[] {
  const shape: number[] = [];
  let level: unknown = value;
  while (Array.isArray(level)) {
    shape.push(level.length);
    if (shape.length > MAX_NESTING) throw new InvalidInputError(`${where} is nested deeper than ${MAX_NESTING} lists`);
    if (level.length === 0) break;
    level = level[0];
  }
  const check = (v: unknown, depth: number, path: string): void => {
    if (depth === shape.length) {
      if (Array.isArray(v)) throw new InvalidInputError(`${path} is nested deeper than its siblings`);
      return;
    }
    if (!Array.isArray(v) || v.length !== shape[depth])
      throw new InvalidInputError(`${path} is ragged: expected ${shape[depth]} elements`);
    v.forEach((x, i) => {
      check(x, depth + 1, `${path}[${i}]`);
    });
  };
  check(value, 0, where);
  return shape;
}

/** `[1][0]`: the place of the flat index `i` in a tensor of `dims`. */
function indexPath(i: number, dims: readonly number[]): string {
  const out: number[] = [];
  for (let d = dims.length - 1; d >= 0; d--) {
    const n = dims[d]! || 1;
    out.unshift(i % n);
    i = Math.floor(i / n);
  }
  return out.map((k) => `[${k}]`).join('');
}

function toElement(dtype: DType, v: unknown, where: string): number | bigint {
  if (dtype === 'BOOL') {
    if (typeof v !== 'boolean' && v !== 0 && v !== 1) throw new InvalidInputError(`${where} must be a boolean`);
    return v ? 1 : 0;
  }
  if (dtype === 'INT64' || dtype === 'UINT64') {
    if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
    if (typeof v === 'string' && /^-?\d+$/.test(v)) return BigInt(v);
    throw new InvalidInputError(`${where} must be an integer`);
  }
  if (
    typeof v !== 'number' ||
    (Number.isNaN(v) && dtype !== 'FP32' && dtype !== 'FP64' && dtype !== 'FP16' && dtype !== 'BF16')
  ) {
    throw new InvalidInputError(`${where} must be a number`);
  }
  if (dtype === 'FP16') return floatToHalf(v);
  if (dtype === 'BF16') return floatToBFloat16(v);
  if (dtype !== 'FP32' && dtype !== 'FP64' && !Number.isInteger(v))
    throw new InvalidInputError(`${where} must be an integer for ${dtype}`);
  return v;
}

/**
 * The leaves of a nested array, in order; a flat array is returned as it is. (Array.prototype.flat
 * walks a flat array of 150k numbers in ~30 ms; this, in well under one.)
 */
export function flatten(values: readonly unknown[], maxDepth = MAX_NESTING): unknown[] {
  if (!values.some(Array.isArray)) return values as unknown[];
  const out: unknown[] = [];
  const walk = (a: readonly unknown[], depth: number): void => {
    if (depth > maxDepth) throw new InvalidInputError(`the values are nested deeper than ${maxDepth} lists`);
    for (const v of a) {
      if (Array.isArray(v)) walk(v, depth + 1);
      else out.push(v);
    }
  };
  walk(values, 1);
  return out;
}

/** An array, or the Float64Array a natively parsed KServe JSON body gives for numbers. */
const isList = (v: unknown): v is ArrayLike<unknown> => Array.isArray(v) || v instanceof Float64Array;

/** Dtypes whose elements are plain numbers, as a JSON array holds them. */
const PLAIN = new Set<DType>(['FP32', 'FP64', 'INT8', 'INT16', 'INT32', 'UINT8', 'UINT16', 'UINT32']);

/**
 * The common case: plain numbers of a plain dtype, nested rectangularly (or flat with a shape),
 * checked in one pass and written straight into the typed array in a second — no flat copy, no call
 * per element, and nothing allocated for a body that does not fit (a few KB of rows whose first
 * ones are long must not claim gigabytes). Null for anything else (a string, a ragged row, NaN for
 * an integer dtype), which the general path then reads again to say where the fault is.
 */
function fastFromJson<D extends DType>(dtype: D, value: unknown, shape?: number[]): Tensor<D> | null {
  if (!PLAIN.has(dtype) || !Array.isArray(value)) return null;
  const dims = shape ?? [];
  if (shape) {
    if (numel(shape) !== value.length) return null;
  } else
    for (let level: unknown = value; Array.isArray(level); level = level[0]) {
      dims.push(level.length);
      if (dims.length > MAX_NESTING || level.length === 0) return null;
    }
  const integral = dtype !== 'FP32' && dtype !== 'FP64';
  const depth = shape ? 1 : dims.length;
  let data: Float64Array | undefined;
  let i = 0;
  // Checks `row` (and writes it, once `data` is made).
  const walk = (row: unknown[], d: number): boolean => {
    if (row.length !== (shape ? value.length : dims[d])) return false;
    if (d < depth - 1) {
      for (const inner of row) if (!Array.isArray(inner) || !walk(inner, d + 1)) return false;
      return true;
    }
    for (let k = 0; k < row.length; k++) {
      const v = row[k];
      if (typeof v !== 'number' || (integral && !Number.isInteger(v))) return false;
      if (data) data[i++] = v;
    }
    return true;
  };
  if (!walk(value, 0)) return null;
  data = allocate(dtype, numel(dims)) as unknown as Float64Array;
  walk(value, 0);
  return { dtype, shape: dims, data: data as unknown as TypedArrayFor<D> };
}

/** A tensor from a nested array (or a flat array, or Float64Array, with an explicit shape). */
export function tensorFromJson<D extends DType>(
  dtype: D,
  value: unknown,
  shape?: number[],
  where = 'value',
): Tensor<D> {
  if (dtype === 'BYTES') throw new TypeError('BYTES tensors cannot be made from JSON numbers');
  // `body.inputs` of a body that says "input": a field not there, not a bad number.
  if (value === undefined) throw new InvalidInputError(`${where} is missing`);
  const fast = fastFromJson(dtype, value, shape);
  if (fast) return fast;
  const dims = shape ?? nestedShape(value, where);
  // A scalar (shape []) is a bare number, as tensorToJson prints it.
  const flat =
    !isList(value) && dims.length === 0 ? [value] : shape ? (value as ArrayLike<unknown>) : flatten(value as unknown[]);
  if (!isList(flat) || flat.length !== numel(dims))
    throw new InvalidInputError(
      `${where} has ${isList(flat) ? flat.length : 0} elements but shape [${dims.join(', ')}] needs ${numel(dims)}`,
    );
  const data = allocate(dtype, flat.length);
  // Numbers already unboxed (a KServe JSON body parsed natively): floats take them as they are.
  if (flat instanceof Float64Array && (dtype === 'FP32' || dtype === 'FP64')) (data as Float32Array).set(flat);
  else {
    let i = 0;
    try {
      for (; i < flat.length; i++) (data as unknown as (number | bigint)[])[i] = toElement(dtype, flat[i], where);
    } catch (error) {
      // Said again with the element's place: value[0][1], as the caller wrote it (nested) or flat.
      if (!(error instanceof InvalidInputError)) throw error;
      throw new InvalidInputError(
        error.message.replace(where, `${where}${indexPath(i, shape ? [flat.length] : dims)}`),
      );
    }
  }
  return { dtype, shape: dims, data: data as TypedArrayFor<D> };
}

/**
 * The spec's input `name` from a request's JSON, as a hook's `pre` makes it: the spec's dtype, and
 * its shape checked against the spec's dims (after a batch dimension when maxBatchSize > 0). A body
 * that does not fit is the caller's error (InvalidInputError, 400) naming `where`, the field the
 * caller sent — so only a hook that makes wrong tensors from a good body is the hook's fault (500).
 *
 * @example
 * pre: (request, ctx) => ({ x: inputFromJson(ctx, 'x', (request.json as { inputs: unknown }).inputs, 'inputs') })
 */
export function inputFromJson(
  context: { inputs: readonly TensorSpec[]; maxBatchSize: number },
  name: string,
  value: unknown,
  where = name,
): Tensor {
  const spec = context.inputs.find((i) => i.name === name);
  if (!spec)
    throw new TypeError(`the spec has no input "${name}" (it has ${context.inputs.map((i) => i.name).join(', ')})`);
  const tensor = tensorFromJson(spec.dtype, value, undefined, where);
  const wanted = context.maxBatchSize > 0 ? [-1, ...spec.dims] : spec.dims;
  const fits = tensor.shape.length === wanted.length && wanted.every((d, k) => d === -1 || d === tensor.shape[k]);
  if (!fits) {
    const shown = wanted.map((d, k) => (d !== -1 ? d : k === 0 && context.maxBatchSize > 0 ? 'batch' : 'any'));
    throw new InvalidInputError(
      `${where} has shape [${tensor.shape.join(', ')}], but ${name} takes [${shown.join(', ')}]${
        context.maxBatchSize > 0 && spec.dims.length === 1 && spec.dims[0]! > 0
          ? ` (rows of ${spec.dims[0]} numbers)`
          : ''
      }`,
    );
  }
  if (context.maxBatchSize > 0 && tensor.shape[0]! > context.maxBatchSize)
    throw new InvalidInputError(
      `${where} has ${tensor.shape[0]} rows, more than ${name}'s batch of ${context.maxBatchSize}`,
    );
  return tensor;
}

function fromElement(dtype: DType, v: number | bigint): number | string | boolean {
  if (typeof v === 'bigint')
    return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
  if (dtype === 'BOOL') return v !== 0;
  if (dtype === 'FP16') return halfToFloat(v);
  if (dtype === 'BF16') return bfloat16ToFloat(v);
  return v;
}

/**
 * What JSON text may still take, shared by the tensors of one response: tensorJsonText throws
 * JsonTooLargeError once the text it made would pass `left` characters (all ASCII for numbers).
 */
export class JsonBudget {
  left: number;
  constructor(readonly limit: number) {
    this.left = limit;
  }
}

/** JSON text that would pass its JsonBudget: thrown before the rest of it is made. */
export class JsonTooLargeError extends RangeError {
  override readonly name = 'JsonTooLargeError';
  constructor(readonly limit: number) {
    super(`the response as JSON would be over its limit of ${limit} bytes`);
  }
}

/** The most characters one element prints as ("-1.1754943508222875e-38", "-9223372036854775808", "false") and a comma. */
const MAX_ELEMENT_CHARS = 26;
/** Elements printed between two looks at the budget (the text made meanwhile passes it by ~26 KB at most). */
const CHECK_EVERY = 1024;

/** Takes `chars` from `budget`, or throws past it. */
function spend(budget: JsonBudget | undefined, chars: number): void {
  if (budget === undefined) return;
  budget.left -= chars;
  if (budget.left < 0) throw new JsonTooLargeError(budget.limit);
}

/**
 * A tensor as JSON text, nested by `shape` (its elements flattened by default): what JSON.stringify
 * makes of tensorToJson's array, byte for byte, in about half its time for number tensors (a
 * finite number prints the same digits either way; NaN and ±Infinity, which JSON cannot hold, are
 * null). With a `budget`, text past it is not made: a tensor whose longest text fits prints as
 * without one; a larger one is measured as it is printed, every CHECK_EVERY elements.
 */
export function tensorJsonText(t: Tensor, shape: readonly number[] = [t.data.length], budget?: JsonBudget): string {
  const data = t.data as unknown as ArrayLike<number>;
  const plain =
    !(t.data instanceof BigInt64Array || t.data instanceof BigUint64Array) &&
    !['BOOL', 'FP16', 'BF16', 'BYTES'].includes(t.dtype);
  // Brackets number at most twice the elements, plus the outermost pair.
  const bound = t.data.length * (MAX_ELEMENT_CHARS + 2) + 2;
  const measured = budget !== undefined && bound > budget.left;
  if (!plain || shape.length === 0) {
    // Made whole, then measured: its bytes were held to the same limit before (the engine's), so
    // its text is at most a few times that.
    const text = JSON.stringify(tensorToJson({ ...t, shape: [...shape] }));
    spend(budget, text.length);
    return text;
  }
  let i = 0;
  let made = 0;
  const build = (depth: number): string => {
    const n = shape[depth]!;
    let out = '[';
    if (depth === shape.length - 1) {
      for (let k = 0; k < n; k++) {
        const v = data[i++]!;
        out += (k === 0 ? '' : ',') + (v - v === 0 ? v : 'null');
        if (measured && i % CHECK_EVERY === 0 && made + out.length > budget!.left) spend(budget, made + out.length);
      }
    } else for (let k = 0; k < n; k++) out += (k === 0 ? '' : ',') + build(depth + 1);
    if (depth === shape.length - 1) made += out.length + 1;
    return `${out}]`;
  };
  const text = build(0);
  spend(budget, text.length);
  return text;
}

/** A tensor as a nested array of numbers (booleans for BOOL). */
export function tensorToJson(t: Tensor): unknown {
  const data = t.data as unknown as ArrayLike<number | bigint>;
  const last = t.shape.length - 1;
  const plain = PLAIN.has(t.dtype) && !(t.data instanceof BigInt64Array || t.data instanceof BigUint64Array);
  let i = 0;
  const build = (depth: number): unknown => {
    if (depth === t.shape.length) return fromElement(t.dtype, data[i++]!);
    if (plain && depth === last) {
      // A row of plain numbers: read as they are, no call per element.
      const row = new Array<number>(t.shape[depth]!);
      for (let k = 0; k < row.length; k++) row[k] = data[i++] as number;
      return row;
    }
    const out = new Array(t.shape[depth]);
    for (let k = 0; k < t.shape[depth]!; k++) out[k] = build(depth + 1);
    return out;
  };
  return build(0);
}
