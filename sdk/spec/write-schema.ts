/** `npm run schema`: writes sdk/spec/hearth.schema.json from the zod schema. */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { functionSpecJsonSchema } from './json-schema.js';

export const SCHEMA_FILE = fileURLToPath(new URL('./hearth.schema.json', import.meta.url));

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(SCHEMA_FILE, `${JSON.stringify(functionSpecJsonSchema(), null, 2)}\n`);
  console.log(`wrote ${SCHEMA_FILE}`);
}
