import type { z } from 'zod';

import { InvalidInputError } from '../errors.js';
import { formatPath } from '../spec/parse.js';

/**
 * A request body checked against its schema: the value, or InvalidInputError naming the first
 * problem (its field in the message, unless the message names it already, and as the reason).
 */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = formatPath(issue.path);
  const at = field && !issue.message.includes(field) ? `${field}: ` : '';
  throw new InvalidInputError(`${at}${issue.message}`, field ? { reason: field } : {});
}
