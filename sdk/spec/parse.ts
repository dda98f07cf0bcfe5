/**
 * Reading specs: from objects, from hearth.yaml text, with errors that point at the field.
 */
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

import { InvalidInputError } from '../errors.js';
import type { FunctionSpec } from './function-spec.js';
import { FunctionSpecSchema } from './function-spec.js';

/** `batching.maxQueueDelayUs`, `inputs[0].dtype`. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (out, key) => (typeof key === 'number' ? `${out}[${key}]` : out ? `${out}.${String(key)}` : String(key)),
    '',
  );
}

/**
 * Zod issues as one message, each line `path: what is wrong`; an unknown key with the nearest valid
 * one, and a value outside its options (`float32`) with the option it means (`FP32`) where `value`,
 * the object checked, is given.
 */
export function describeIssues(error: z.ZodError, value?: unknown): string {
  return error.issues
    .flatMap((i) => {
      if (i.code === 'unrecognized_keys') return i.keys.map((key) => unknownKey([...i.path, key]));
      const meant = i.code === 'invalid_value' ? meantOption(valueAt(value, i.path), i.values) : undefined;
      return [
        `${formatPath(i.path) || '(spec)'}: ${i.message}${meant === undefined ? '' : ` (did you mean ${meant}?)`}`,
      ];
    })
    .join('; ');
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let at = value;
  for (const key of path)
    at = typeof at === 'object' && at !== null ? (at as Record<PropertyKey, unknown>)[key] : undefined;
  return at;
}

/** The names PyTorch, NumPy and Triton's config.pbtxt give datatypes, as Triton's own. */
const DTYPE_WORDS: Record<string, string> = {
  FLOAT: 'FP32',
  FLOAT32: 'FP32',
  HALF: 'FP16',
  FLOAT16: 'FP16',
  DOUBLE: 'FP64',
  FLOAT64: 'FP64',
  BFLOAT16: 'BF16',
  LONG: 'INT64',
  INT: 'INT32',
  SHORT: 'INT16',
  BOOLEAN: 'BOOL',
  STRING: 'BYTES',
  STR: 'BYTES',
};

/** The option a string outside `options` means: `float32`, `torch.float32`, `TYPE_FP32` → FP32; `fp23` → FP32. */
function meantOption(input: unknown, options: readonly unknown[]): string | undefined {
  if (typeof input !== 'string' || input.length > 64) return undefined;
  const names = options.filter((o): o is string => typeof o === 'string');
  const word = input
    .trim()
    .toUpperCase()
    .replace(/^(TORCH\.|NP\.|NUMPY\.|TYPE_)/, '');
  const exact = names.find((n) => n.toUpperCase() === word) ?? names.find((n) => n === DTYPE_WORDS[word]);
  if (exact !== undefined) return exact;
  let best: { name: string; d: number } | undefined;
  for (const name of names) {
    const d = distance(word, name.toUpperCase());
    if (!best || d < best.d) best = { name, d };
  }
  return best && best.d <= Math.max(1, Math.floor(word.length / 3)) ? best.name : undefined;
}

let knownPaths: string[][] | undefined;

/** Every key path the spec takes (`batching.maxQueueDelayUs`), from its JSON schema; arrays as `[]`. */
function specPaths(): string[][] {
  if (knownPaths) return knownPaths;
  const out: string[][] = [];
  type Node = { properties?: Record<string, Node>; items?: Node; anyOf?: Node[]; oneOf?: Node[]; allOf?: Node[] };
  const walk = (node: Node | undefined, at: string[], depth: number): void => {
    if (!node || depth > 8) return;
    for (const [key, child] of Object.entries(node.properties ?? {})) {
      out.push([...at, key]);
      walk(child, [...at, key], depth + 1);
    }
    if (node.items) walk(node.items, [...at, '[]'], depth + 1);
    for (const alt of [...(node.anyOf ?? []), ...(node.oneOf ?? []), ...(node.allOf ?? [])]) walk(alt, at, depth + 1);
  };
  walk(z.toJSONSchema(FunctionSpecSchema, { io: 'input', unrepresentable: 'any' }) as Node, [], 0);
  knownPaths = out;
  return out;
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const next = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = row[j]!;
      row[j] = next;
    }
  }
  return row[b.length]!;
}

/** `maxBatchSze: unknown key (did you mean maxBatchSize?)`, the suggestion the nearest valid key anywhere. */
function unknownKey(path: readonly PropertyKey[]): string {
  const where = formatPath(path);
  const key = String(path.at(-1)).toLowerCase();
  const parent = path
    .slice(0, -1)
    .map((p) => (typeof p === 'number' ? '[]' : String(p)))
    .join('.');
  let best: { path: string[]; score: number } | undefined;
  for (const candidate of specPaths()) {
    const last = candidate.at(-1)!.toLowerCase();
    // Same parent first: a key misspelt in place beats the same word elsewhere.
    const score = distance(key, last) + (candidate.slice(0, -1).join('.') === parent ? 0 : 0.5);
    if (!best || score < best.score) best = { path: candidate, score };
  }
  const limit = Math.max(2, Math.floor(key.length / 3));
  const suggestion =
    best && best.score <= limit + 0.5 ? ` (did you mean ${best.path.join('.').replace(/\.\[\]/g, '[]')}?)` : '';
  return `${where}: unknown key${suggestion}`;
}

/** Validates a spec object and fills in its defaults; throws InvalidInputError naming each bad field. */
export function parseSpec(value: unknown, source = 'spec'): FunctionSpec {
  const result = FunctionSpecSchema.safeParse(value);
  if (!result.success) {
    const first = result.error.issues[0];
    throw new InvalidInputError(`invalid ${source}: ${describeIssues(result.error, value)}`, {
      reason: first ? formatPath(first.path) : undefined,
    });
  }
  return result.data;
}

/** Parses hearth.yaml text. */
export function parseSpecYaml(text: string, source = 'hearth.yaml'): FunctionSpec {
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch (cause) {
    throw new InvalidInputError(`${source} is not valid YAML: ${(cause as Error).message}`, { cause });
  }
  return parseSpec(value, source);
}
