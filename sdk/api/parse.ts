import type { z } from 'zod';

import { InvalidInputError } from '../errors.js';

/** A request body checked against its schema: the value, or InvalidInputError naming the first problem. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const at = issue.path.length > 0 && !issue.message.includes(issue.path.join('.')) ? `${issue.path.join('.')}: ` : '';
  throw new InvalidInputError(`${at}${issue.message}`);
}
