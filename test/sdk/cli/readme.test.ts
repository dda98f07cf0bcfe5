/**
 * The README's walk-through (the sh block after `<!-- walkthrough -->`) runs as written: its lines,
 * as one bash script with `set -e`, in an empty folder outside the repository, against a real node
 * (HEARTH_URL), with `hearth` on PATH as the installed CLI is (the package's bundle, HEARTH_CLI) and
 * the tests' python3. Then the outputs a reader is promised: the canary split, the rollback to v1,
 * scaling in place, the log.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, expect, it } from 'vitest';

import { HEARTH_CLI, PYTHON, REPO_ROOT } from '../../helpers/fixtures.js';
import { testNode } from '../../helpers/node.js';

const run = promisify(execFile);
const work = await mkdtemp(join(tmpdir(), 'hearth-readme-'));
afterAll(() => rm(work, { recursive: true, force: true }));

/** The commands of the README's walk-through block. */
async function walkthrough(): Promise<string[]> {
  const readme = await readFile(join(REPO_ROOT, 'README.md'), 'utf8');
  const block = /<!-- walkthrough -->\n```sh\n([\s\S]*?)```/.exec(readme);
  if (!block) throw new Error('the README has no <!-- walkthrough --> sh block');
  return block[1]!.split('\n').filter((line) => line.trim() !== '');
}

it("runs the README's walk-through as written", async () => {
  const lines = await walkthrough();
  expect(lines[0]).toMatch(/^hearth init my-model/);
  // `hearth` as the installed CLI, and python3 the one with PyTorch the tests use.
  const bin = join(work, 'bin');
  await mkdir(bin);
  await symlink(HEARTH_CLI, join(bin, 'hearth'));
  await symlink(PYTHON, join(bin, 'python3'));
  const script = join(work, 'walkthrough.sh');
  // Each command's output behind a marker, to check what the reader is told line by line.
  await writeFile(script, ['set -euo pipefail', ...lines.flatMap((line, i) => [`echo "@@ ${i}"`, line])].join('\n'));
  const folder = join(work, 'reader');
  await mkdir(folder);
  const node = await testNode(join(work, 'data'));
  try {
    const { stdout } = await run('bash', [script], {
      cwd: folder,
      env: {
        ...process.env,
        PATH: `${bin}:${dirname(process.execPath)}:/usr/bin:/bin`,
        HEARTH_URL: node.httpUrl,
        HEARTH_PYTHON: '',
      },
    });
    const outputs = stdout.split(/^@@ \d+\n/m).slice(1);
    const of = (command: RegExp) => {
      const i = lines.findIndex((l) => command.test(l));
      expect(i, `${command}`).toBeGreaterThanOrEqual(0);
      return outputs[i]!;
    };
    expect(of(/^hearth deploy \. --wait/)).toMatch(/my-model v1 ready/);
    expect(of(/^hearth deploy \. --keep-traffic/)).toMatch(/my-model v2 ready/);
    const v1 = JSON.parse(of(/^hearth invoke my-model --data/)) as { outputs: number[][] };
    const v2 = JSON.parse(of(/^hearth invoke my-model --version 2/)) as { outputs: number[][] };
    expect(v1.outputs[0]).toHaveLength(3);
    // The second model is another model: its answer differs.
    expect(v2.outputs[0]).not.toEqual(v1.outputs[0]);
    // A step a row, the spec's example as the body (a step whose every request failed would exit 1).
    const bench = of(/^hearth bench my-model/);
    expect(bench).toMatch(/my-model: POST \S+\/fn\/my-model, example inputs, closed loop/);
    expect(bench).toMatch(/│ c=1 +│/);
    expect(bench).toMatch(/│ c=8 +│/);
    expect(of(/^hearth traffic my-model 1=90/)).toContain('v1=90 v2=10');
    expect(of(/^hearth rollback/)).toContain('v1=90 v2=10 → v1=100');
    expect(of(/^hearth traffic my-model 2=100/)).toContain('v2=100');
    expect(of(/^hearth scale/)).toMatch(/my-model v2: min 1, max 4/);
    expect(of(/^hearth logs/)).toMatch(/v2 lifecycle +info +warm/);
    expect(of(/--async --wait/)).toMatch(/succeeded/);
  } finally {
    await node.close();
  }
}, 180_000);
