/**
 * `npm run examples`: makes each example function's model (its export.py, with HEARTH_PYTHON or
 * python3) and deploys it to a running node (HEARTH_URL, default http://127.0.0.1:8000) with the
 * same code as `hearth deploy`.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { deployFolder } from '../sdk/cli/deploy.js';
import { Hearth } from '../sdk/index.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const python =
  process.env.HEARTH_PYTHON ??
  (statSync('/usr/bin/python3', { throwIfNoEntry: false }) ? '/usr/bin/python3' : 'python3');
const hearth = new Hearth();
if (!(await hearth.ready())) {
  console.error(`no Hearth node is ready at ${hearth.url}: start one with \`npm start\` (or set HEARTH_URL)`);
  process.exit(1);
}
for (const name of readdirSync(here)
  .filter((f) => statSync(join(here, f)).isDirectory())
  .sort()) {
  const dir = join(here, name);
  execFileSync(python, ['export.py'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  const r = await deployFolder(hearth, dir, { progress: process.stderr.isTTY });
  console.log(`${r.name} v${r.version} ${r.status}${r.reason ? `: ${r.reason}` : ''}  ${hearth.url}${r.url}`);
}
