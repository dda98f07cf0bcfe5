/** `npm run schema`: writes sdk/spec/hearth.schema.json from the zod schema, and the README's spec reference. */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { functionSpecJsonSchema } from './json-schema.js';
import { withReference } from './reference.js';

export const SCHEMA_FILE = fileURLToPath(new URL('./hearth.schema.json', import.meta.url));
export const README_FILE = fileURLToPath(new URL('../../README.md', import.meta.url));

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(SCHEMA_FILE, `${JSON.stringify(functionSpecJsonSchema(), null, 2)}\n`);
  writeFileSync(README_FILE, withReference(readFileSync(README_FILE, 'utf8')));
  console.log(`wrote ${SCHEMA_FILE} and the spec reference in ${README_FILE}`);
}
