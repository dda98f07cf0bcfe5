/**
 * Reading specs: from objects, from hearth.yaml text, with errors that point at the field.
 */
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';

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

/** Zod issues as one message, each line `path: what is wrong`. */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${formatPath(i.path) || '(spec)'}: ${i.message}`).join('; ');
}

/** Validates a spec object and fills in its defaults; throws InvalidInputError naming each bad field. */
export function parseSpec(value: unknown, source = 'spec'): FunctionSpec {
  const result = FunctionSpecSchema.safeParse(value);
  if (!result.success) {
    const first = result.error.issues[0];
    throw new InvalidInputError(`invalid ${source}: ${describeIssues(result.error)}`, {
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
