/** The JSON Schema of hearth.yaml, generated from the zod schema (the input side: defaults optional). */
import { z } from 'zod';

import { FunctionSpecSchema } from './function-spec.js';

export function functionSpecJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(FunctionSpecSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return {
    ...schema,
    $id: 'https://hearth.dev/schema/hearth.schema.json',
    title: 'Hearth function spec (hearth.yaml)',
  };
}
