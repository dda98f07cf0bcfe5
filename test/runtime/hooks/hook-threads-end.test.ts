import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { expect, it } from 'vitest';

import { REPO_ROOT } from '../../helpers/fixtures.js';

const run = promisify(execFile);

it('ends hook threads (one past its limit, sandboxed pools closed) and the process lives on', async () => {
  // An abort rejects here with the child's signal and its stderr (the assertion's line).
  const { stdout, stderr } = await run(
    process.execPath,
    ['--import', 'tsx', join(REPO_ROOT, 'test', 'fixtures', 'hook-threads-end.ts')],
    { cwd: REPO_ROOT },
  );
  expect(stdout).toBe('ok');
  expect(stderr).not.toMatch(/Assertion|Error/);
});
