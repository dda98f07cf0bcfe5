/**
 * `hearth init` where the PATH's python3 has no PyTorch (a pyenv or venv python, common on a
 * developer's machine): it makes model.pt with the system's python3 that has it, and says so — in
 * its output and in the folder's README, whose `python3 export.py` would otherwise fail.
 */
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, expect, it } from 'vitest';

import { initFunction } from '../../../sdk/cli/init.js';
import { PYTHON } from '../../helpers/fixtures.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-init-python-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

it('names the Python with PyTorch when the PATH one has none', async () => {
  // A python3 on PATH without torch: `import torch` fails in it.
  const bin = join(dir, 'bin');
  await mkdir(bin);
  await writeFile(
    join(bin, 'python3'),
    '#!/bin/sh\necho "ModuleNotFoundError: No module named \'torch\'" >&2\nexit 1\n',
  );
  await chmod(join(bin, 'python3'), 0o755);
  const saved = { path: process.env.PATH, python: process.env.HEARTH_PYTHON };
  process.env.PATH = `${bin}:${saved.path}`;
  delete process.env.HEARTH_PYTHON;
  try {
    const r = await initFunction(join(dir, 'fn'), { python: undefined });
    expect(r.model).toBe(true);
    expect(r.python).toBe('/usr/bin/python3');
    expect(r.note).toBe('the python3 on PATH has no PyTorch: run export.py with /usr/bin/python3');
    const readme = await readFile(join(dir, 'fn', 'README.md'), 'utf8');
    expect(readme).toContain('/usr/bin/python3 export.py');
    expect(readme).not.toMatch(/^python3 export\.py/m);
  } finally {
    process.env.PATH = saved.path;
    if (saved.python !== undefined) process.env.HEARTH_PYTHON = saved.python;
  }
  // With torch on PATH (the tests' own python named), no note.
  const plain = await initFunction(join(dir, 'fn2'), { python: PYTHON });
  expect(plain.note).toBeUndefined();
}, 120_000);
