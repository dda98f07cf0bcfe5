/**
 * A model configuration in JSON — what Triton's repository `load` takes as `parameters.config` and
 * what its model-configuration extension answers — read into the message config.pbtxt's reader
 * takes (./text-format.ts), so both go through one converter (./triton-config.ts).
 *
 * JSON is read as protobuf's JSON mapping reads a ModelConfig: field names in snake_case or
 * lowerCamelCase; int64 values as numbers or decimal strings; enums by name; map fields
 * (`parameters`, a warm-up's `inputs`, …) as objects. A field at its default value (an empty
 * string, false, an empty list or map, an enum's zero value) is the same as no field, as in proto3
 * — so a configuration read back from `GET /v2/models/{m}/config` loads unchanged.
 */
import { InvalidInputError } from '../../errors.js';
import type { TextMessage, TextValue } from './text-format.js';

/** ModelConfig's map fields (objects in JSON, repeated key/value entries in text format). */
const MAP_FIELDS = new Set(['parameters', 'inputs', 'cc_model_filenames', 'metric_tags', 'priority_queue_policy']);
/** String fields whose value could read as a number or an enum name: kept as strings. */
const STRING_FIELDS = new Set([
  'name',
  'platform',
  'backend',
  'runtime',
  'label_filename',
  'default_model_filename',
  'string_value',
  'key',
  'host_policy',
  'input_data_file',
]);
/** Zero values of ModelConfig's enums: the same as the field absent. */
const ENUM_ZEROS = new Set(['TYPE_INVALID', 'FORMAT_NONE', 'KIND_AUTO', 'PRIORITY_DEFAULT', 'REJECT']);
const ENUM = /^(?:[A-Z][A-Z0-9]*_[A-Z0-9_]+|REJECT|DELAY)$/;

const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** A scalar; at its default value (not in a list, where every element counts) undefined. */
function scalar(
  field: string,
  value: string | number | boolean,
  where: string,
  inList: boolean,
): TextValue | undefined {
  if (typeof value === 'boolean') return value || inList ? value : undefined;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new InvalidInputError(`${where} must be a finite number`);
    return value !== 0 || inList ? value : undefined;
  }
  if (value === '' && !inList) return undefined;
  if (STRING_FIELDS.has(field)) return value;
  if (ENUM.test(value)) return ENUM_ZEROS.has(value) && !inList ? undefined : { enum: value };
  if (/^-?\d+(?:\.\d+)?$/.test(value)) return scalar(field, Number(value), where, inList);
  return value;
}

function values(field: string, value: unknown, where: string, inList = false): TextValue[] {
  if (value === null || value === undefined) return [];
  if (Array.isArray(value)) return value.flatMap((v, i) => values(field, v, `${where}[${i}]`, true));
  if (typeof value === 'object') {
    if (!MAP_FIELDS.has(field)) return [message(value, where)];
    return Object.entries(value).map(([key, v]) => ({
      key: [key],
      value:
        typeof v === 'object' && v !== null ? [message(v, `${where}.${key}`)] : values('value', v, `${where}.${key}`),
    }));
  }
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    const v = scalar(field, value, where, inList);
    return v === undefined ? [] : [v];
  }
  throw new InvalidInputError(`${where} is not a value a model configuration holds`);
}

function message(json: object, where: string): TextMessage {
  const out: TextMessage = {};
  for (const [key, value] of Object.entries(json)) {
    const field = snake(key);
    const read = values(field, value, where ? `${where}.${field}` : field);
    // An empty message stays (version_policy { all {} } says something); an empty list or map does not.
    if (read.length > 0) out[field] = [...(out[field] ?? []), ...read];
  }
  return out;
}

/**
 * How deep a configuration's JSON may nest: a ModelConfig's deepest fields (an ensemble step's
 * maps, a warm-up input's dims) are under ten levels; deeper JSON is refused before the recursive
 * reading below, which would otherwise run out of stack (a RangeError, a 500) on hostile input.
 */
export const MAX_CONFIG_DEPTH = 32;

/** Whether `json` nests deeper than `max` objects and arrays (walked without recursion). */
function deeperThan(json: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[json, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    if (depth > max) return true;
    for (const v of Object.values(value)) stack.push([v, depth + 1]);
  }
  return false;
}

/** A ModelConfig as JSON (an object), as config.pbtxt's reader takes it. */
export function jsonConfigToMessage(json: unknown, what = 'the configuration'): TextMessage {
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new InvalidInputError(`${what} must be a JSON object (a model configuration)`);
  if (deeperThan(json, MAX_CONFIG_DEPTH))
    throw new InvalidInputError(
      `${what} nests deeper than ${MAX_CONFIG_DEPTH} levels; a model configuration is far shallower`,
    );
  return message(json, '');
}
