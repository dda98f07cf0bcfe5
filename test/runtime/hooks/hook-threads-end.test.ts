import { spawn } from 'node:child_process';
import { join } from 'node:path';

import { expect, it } from 'vitest';

import { REPO_ROOT } from '../../helpers/fixtures.js';

it('ends hook threads (one past its limit, sandboxed pools closed) and the process lives on', async () => {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(REPO_ROOT, 'test', 'fixtures', 'hook-threads-end.ts')],
    {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    err += d;
  });
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
    child.once('exit', (c, s) => resolve([c, s])),
  );
  expect({ code, signal, out, err: err.match(/.*(Assertion|Error).*/)?.[0] }).toEqual({
    code: 0,
    signal: null,
    out: 'ok',
    err: undefined,
  });
});
