/**
 * The bodies a bench run sends, made once before it starts (never per request): random tensors of
 * each input's dtype and shape, the spec's example, or a file's bodies. A few distinct random
 * bodies are cycled, so a cache keyed on the body could not serve them all.
 */
import { open } from 'node:fs/promises';

import { InvalidInputError } from '../errors.js';
import { encodeBinary } from '../kserve-binary.js';
import type { DType } from '../tensor.js';
import { bytesOf, numel } from '../tensor.js';
import { encodeBytes } from '../tensor-bytes.js';
import { flatten, tensorFromJson } from '../tensor-json.js';
import type { BenchBody } from './types.js';
import { BenchUsageError } from './usage-error.js';

/** The largest input file read (its bodies stay in memory for the run). */
export const MAX_INPUT_FILE_BYTES = 64 * 2 ** 20;
/** The most bodies one file may hold (JSON lines). */
export const MAX_BODIES = 100_000;
/** The largest random body made, as encoded (a tensor past it needs --input-file). */
export const MAX_RANDOM_BYTES = 64 * 2 ** 20;
/** How many distinct random bodies are cycled. */
const RANDOM_BODIES = 8;

/** An input as the model's metadata gives it: name, datatype and shape (-1: variable). */
export interface InputTensor {
  name: string;
  datatype: string;
  shape: number[];
}

const encoder = new TextEncoder();

/**
 * A file's bodies: one JSON document a line (JSON lines: every non-empty line parses), else the
 * whole file as one body, sent with `contentType` (default application/octet-stream). Refuses a
 * file over MAX_INPUT_FILE_BYTES, or one that is not a regular file, before reading it.
 */
export async function readBodies(path: string, contentType?: string): Promise<BenchBody[]> {
  const file = await open(path, 'r');
  try {
    const info = await file.stat();
    if (!info.isFile()) throw new BenchUsageError(`--input-file ${path} is not a regular file`);
    if (info.size > MAX_INPUT_FILE_BYTES)
      throw new BenchUsageError(
        `--input-file ${path} is ${info.size} bytes: the most it may be is ${MAX_INPUT_FILE_BYTES}`,
      );
    if (info.size === 0) throw new BenchUsageError(`--input-file ${path} is empty`);
    const bytes = new Uint8Array(info.size);
    const { bytesRead } = await file.read(bytes, 0, info.size, 0);
    return splitBodies(bytes.subarray(0, bytesRead), contentType);
  } finally {
    await file.close();
  }
}

/**
 * One JSON body if the whole file is one JSON document (pretty-printed or not), else JSON lines if
 * every non-empty line is JSON (unless a content type says otherwise), else one raw body.
 */
export function splitBodies(bytes: Uint8Array, contentType?: string): BenchBody[] {
  if (contentType === undefined || /json/.test(contentType)) {
    const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
    if (isJson(text)) return [{ bytes, contentType: contentType ?? 'application/json' }];
    const lines = text
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '');
    if (lines.length > 0 && lines.every(isJson)) {
      if (lines.length > MAX_BODIES)
        throw new BenchUsageError(`the input file has ${lines.length} bodies: the most it may hold is ${MAX_BODIES}`);
      return lines.map((l) => ({ bytes: encoder.encode(l), contentType: contentType ?? 'application/json' }));
    }
  }
  return [{ bytes, contentType: contentType ?? 'application/octet-stream' }];
}

function isJson(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

/** The body of a spec's `example` (a function URL's JSON). */
export function exampleBody(example: unknown): BenchBody {
  return { bytes: encoder.encode(JSON.stringify(example)), contentType: 'application/json' };
}

/** The shape sent: each variable dimension (-1, the batch one included) as 1. */
export const concreteShape = (shape: readonly number[]): number[] => shape.map((d) => (d < 0 ? 1 : d));

/**
 * JSON values (numbers, booleans) as a dtype's raw little-endian elements, read as tensorFromJson
 * reads them: a value the dtype cannot hold (a string for FP32, 1.5 for INT64) is refused
 * (InvalidInputError), not sent as NaN or 0.
 */
export function packValues(datatype: string, values: readonly unknown[]): Uint8Array {
  // Triton's BYTES: each element as a 4-byte little-endian length and its bytes.
  if (datatype === 'BYTES') return encodeBytes(values.map(String));
  return bytesOf(tensorFromJson(datatype as DType, values, [values.length]).data);
}

/**
 * KServe JSON infer requests (a file's bodies, one a line) as ModelInfer's tensors: each of the
 * model's inputs by name, its shape as given and its `data` packed raw. The server judges them.
 */
export function rawFromKserveJson(
  bodies: readonly BenchBody[],
  inputs: readonly InputTensor[],
): { shapes: number[][]; raw: Uint8Array[] }[] {
  const decoder = new TextDecoder();
  return bodies.map((b, line) => {
    let request: { inputs?: { name?: unknown; shape?: unknown; data?: unknown }[] };
    const refuse = () =>
      new BenchUsageError(`--input-file body ${line + 1}: gRPC takes KServe JSON infer requests, one a line`);
    try {
      request = JSON.parse(decoder.decode(b.bytes)) as typeof request;
    } catch {
      throw refuse();
    }
    // `null`, a number or a list is JSON too, but no request.
    if (typeof request !== 'object' || request === null || Array.isArray(request)) throw refuse();
    const given = new Map((request.inputs ?? []).map((i) => [i.name, i]));
    return {
      shapes: inputs.map((i) => {
        const shape = given.get(i.name)?.shape;
        if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d)))
          throw new BenchUsageError(`--input-file body ${line + 1}: input "${i.name}" needs a shape of whole numbers`);
        return shape as number[];
      }),
      raw: inputs.map((i) => {
        const data = given.get(i.name)?.data;
        if (!Array.isArray(data))
          throw new BenchUsageError(`--input-file body ${line + 1}: input "${i.name}" needs data`);
        try {
          return packValues(i.datatype, flatten(data));
        } catch (error) {
          if (!(error instanceof InvalidInputError)) throw error;
          throw new BenchUsageError(`--input-file body ${line + 1}: input "${i.name}": ${error.message}`);
        }
      }),
    };
  });
}

/** Random values of a dtype: floats in [0, 1), small integers, booleans, short strings. */
export function randomValues(datatype: string, count: number): { json: unknown[]; bytes: Uint8Array } {
  const float = datatype.startsWith('FP') || datatype === 'BF16';
  const json = Array.from({ length: count }, () => {
    const r = Math.random();
    if (datatype === 'BYTES') return `bench-${r.toString(36).slice(2, 8)}`;
    if (datatype === 'BOOL') return r < 0.5;
    return float ? r : Math.floor(r * 10);
  });
  return { json, bytes: packValues(datatype, json) };
}

/** About how many bytes a random value takes at most as JSON (with its comma), by dtype. */
function jsonBytesPerValue(datatype: string): number {
  if (datatype === 'BYTES') return 16; // "bench-xxxxxx",
  if (datatype === 'BOOL') return 6; // false,
  return datatype.startsWith('FP') || datatype === 'BF16' ? 24 : 2; // 0.12345678901234567, or 7,
}

/**
 * Refuses random bodies past MAX_RANDOM_BYTES as they would be encoded (JSON: at most 24 bytes a
 * float; binary and raw: 8 bytes an element at most, 16 a BYTES one), naming the largest input.
 */
function checkSize(inputs: readonly InputTensor[], format: 'json' | 'binary'): void {
  const sizes = inputs.map((i) => {
    const per = format === 'json' ? jsonBytesPerValue(i.datatype) : i.datatype === 'BYTES' ? 16 : 8;
    return numel(concreteShape(i.shape)) * per;
  });
  const bytes = sizes.reduce((a, b) => a + b, 0);
  if (!(bytes <= MAX_RANDOM_BYTES)) {
    const k = sizes.indexOf(Math.max(...sizes));
    const i = inputs[k]!;
    throw new BenchUsageError(
      `random inputs would make a ${format === 'json' ? 'JSON' : 'binary'} body of about ${bytes} bytes (input "${i.name}", ${i.datatype} [${concreteShape(i.shape).join(', ')}], about ${sizes[k]}): the most is ${MAX_RANDOM_BYTES}; give --input-file instead`,
    );
  }
}

/** Nested arrays of `shape` over flat `values`. */
function nest(values: readonly unknown[], shape: readonly number[]): unknown {
  if (shape.length === 0) return values[0];
  if (shape.length === 1) return values;
  const inner = numel(shape.slice(1));
  return Array.from({ length: shape[0]! }, (_, i) => nest(values.slice(i * inner, (i + 1) * inner), shape.slice(1)));
}

/** Random bodies for a function URL's default hook: `{"inputs": {name: nested array}}`. */
export function randomFunctionBodies(inputs: readonly InputTensor[]): BenchBody[] {
  checkSize(inputs, 'json');
  return Array.from({ length: RANDOM_BODIES }, () => {
    const fields = Object.fromEntries(
      inputs.map((i) => {
        const shape = concreteShape(i.shape);
        return [i.name, nest(randomValues(i.datatype, numel(shape)).json, shape)];
      }),
    );
    return { bytes: encoder.encode(JSON.stringify({ inputs: fields })), contentType: 'application/json' };
  });
}

/** Random KServe v2 infer bodies, JSON or with Triton's binary tensor extension. */
export function randomKserveBodies(inputs: readonly InputTensor[], format: 'json' | 'binary'): BenchBody[] {
  checkSize(inputs, format);
  return Array.from({ length: RANDOM_BODIES }, () => {
    const values = inputs.map((i) => randomValues(i.datatype, numel(concreteShape(i.shape))));
    if (format === 'json') {
      const request = {
        inputs: inputs.map((i, k) => ({
          name: i.name,
          shape: concreteShape(i.shape),
          datatype: i.datatype,
          data: values[k]!.json,
        })),
      };
      return { bytes: encoder.encode(JSON.stringify(request)), contentType: 'application/json' };
    }
    const header = {
      inputs: inputs.map((i, k) => ({
        name: i.name,
        shape: concreteShape(i.shape),
        datatype: i.datatype,
        parameters: { binary_data_size: values[k]!.bytes.byteLength },
      })),
      parameters: { binary_data_output: true },
    };
    const { body, headerLength } = encodeBinary(
      header,
      values.map((v) => v.bytes),
    );
    return { bytes: body, contentType: 'application/octet-stream', headerLength };
  });
}

/** Random ModelInfer requests' tensors: each input's shape and raw bytes. */
export function randomRawInputs(inputs: readonly InputTensor[]): { shapes: number[][]; raw: Uint8Array[] }[] {
  checkSize(inputs, 'binary');
  return Array.from({ length: RANDOM_BODIES }, () => ({
    shapes: inputs.map((i) => concreteShape(i.shape)),
    raw: inputs.map((i) => randomValues(i.datatype, numel(concreteShape(i.shape))).bytes),
  }));
}
