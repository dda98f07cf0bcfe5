import type { z } from 'zod';

import { InvalidInputError } from '../errors.js';
import { formatPath } from '../spec/parse.js';

/**
 * A request body that failed its schema, as InvalidInputError naming the first problem (its field
 * in the message, unless the message names it already, and as the reason).
 */
export function invalidBody(error: Pick<z.core.$ZodError, 'issues'>): InvalidInputError {
  const issue = error.issues[0]!;
  const field = formatPath(issue.path);
  const at = field && !issue.message.includes(field) ? `${field}: ` : '';
  return new InvalidInputError(`${at}${issue.message}`, field ? { reason: field } : {});
}

/** A request body checked against its schema: the value, or invalidBody's error. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  throw invalidBody(parsed.error);
}
