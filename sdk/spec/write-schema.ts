/**
 * `npm run schema`: writes sdk/spec/hearth.schema.json from the zod schema, and the spec reference in
 * docs/functions-and-hooks.md.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { functionSpecJsonSchema } from './json-schema.js';
import { withReference } from './reference.js';

export const SCHEMA_FILE = fileURLToPath(new URL('./hearth.schema.json', import.meta.url));
export const REFERENCE_FILE = fileURLToPath(new URL('../../docs/functions-and-hooks.md', import.meta.url));

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(SCHEMA_FILE, `${JSON.stringify(functionSpecJsonSchema(), null, 2)}\n`);
  writeFileSync(REFERENCE_FILE, withReference(readFileSync(REFERENCE_FILE, 'utf8')));
  console.log(`wrote ${SCHEMA_FILE} and the spec reference in ${REFERENCE_FILE}`);
}
