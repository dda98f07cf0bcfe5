/**
 * `hearth dev` as a developer runs it: the CLI (a child process) on a function folder; it prints the
 * URL, serves the function with the node's runtime, shows the hook's console lines, and redeploys
 * when the folder changes — a changed hook.ts answers with its new code, a new model.pt with the new
 * model's answer (python3-torch's for the same input). Ctrl-C (SIGINT) ends it.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import { afterAll, expect, it } from 'vitest';

import { PYTHON, REPO_ROOT } from '../../helpers/fixtures.js';
import { maxAbsDiff } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';
import { waitFor } from '../../helpers/wait.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-dev-test-'));
const CLI = join(REPO_ROOT, 'sdk', 'cli', 'hearth.mjs');
let child: ChildProcess | undefined;
afterAll(async () => {
  child?.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

const X = [[1, 2, 3, 4]];
const call = async (url: string) =>
  (await (
    await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: X }),
    })
  ).json()) as { outputs: number[][]; reloaded?: boolean };
const reference = (model: string) =>
  Array.from(
    pythonForward(model, [{ dtype: 'FP32', shape: [1, 4], data: Float32Array.from(X.flat()) }]).outputs[0]!
      .data as Float32Array,
  );

it('serves a folder, shows its log lines, and reloads the hook and the model when they change', async () => {
  const fn = join(dir, 'devfn');
  execFileSync(CLI, ['init', fn], { env: { ...process.env, HEARTH_PYTHON: PYTHON } });
  child = spawn(CLI, ['dev', fn, '--port', '0'], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: string[] = [];
  createInterface({ input: child.stdout! }).on('line', (l) => lines.push(l));
  const ready = await waitFor(
    'hearth dev ready',
    () => lines.find((l) => l.includes('"hearth dev ready"')),
    (l) => l !== undefined,
    { timeoutMs: 60_000 },
  );
  const { url } = JSON.parse(ready!) as { url: string };
  expect(lines.some((l) => /^✓ deployed: devfn v1 ready/.test(l))).toBe(true);
  // The call to paste is the spec's own example, not a placeholder. It is printed after the ready
  // line, which a pipe may hand over in a read of its own.
  const curl = `  curl -s ${url} -H 'content-type: application/json' -d '{"inputs":[[1,2,3,4]]}'`;
  await waitFor('the watching line', () => lines.some((l) => l.startsWith('watching ')), Boolean);
  expect(lines).toContain(curl);
  const v1 = await call(url);
  expect(maxAbsDiff(v1.outputs[0]!, reference(join(fn, 'model.pt')))).toBeLessThan(1e-5);

  // A changed hook: rebundled and redeployed; its console line shows in dev's output.
  const hook = await readFile(join(fn, 'hook.ts'), 'utf8');
  await writeFile(
    join(fn, 'hook.ts'),
    hook.replace(
      'return { outputs: tensorToJson(outputs.y!) };',
      "console.log('post v2'); return { outputs: tensorToJson(outputs.y!), reloaded: true };",
    ),
  );
  await waitFor(
    'the hook reloaded',
    () => lines.some((l) => /^✓ reloaded \(hook\.ts\): devfn v2 ready/.test(l)),
    Boolean,
    {
      timeoutMs: 30_000,
    },
  );
  expect((await call(url)).reloaded).toBe(true);
  await waitFor('the hook console line', () => lines.some((l) => / v2 hook +info +post v2$/.test(l)), Boolean);

  // Saves by rename (what sed -i and editors' safe-save do), twice: each one seen, named hook.ts.
  for (const [from, to, version] of [
    ['reloaded: true', 'reloaded: true, saved: 1', 3],
    ['saved: 1', 'saved: 2', 4],
  ] as const) {
    execFileSync('sed', ['-i', `s/${from}/${to}/`, join(fn, 'hook.ts')]);
    await waitFor(
      `the rename-save to ${to}`,
      () => lines.some((l) => new RegExp(`^✓ reloaded \\(hook\\.ts\\): devfn v${version} ready`).test(l)),
      Boolean,
      { timeoutMs: 30_000 },
    );
    expect(((await call(url)) as { saved?: number }).saved).toBe(version - 2);
  }

  // A hook that does not type-check is refused with tsc's file:line; the version before keeps serving.
  const good = await readFile(join(fn, 'hook.ts'), 'utf8');
  await writeFile(join(fn, 'hook.ts'), good.replace('post(outputs) {', 'post(outputs) {\n    const n: string = 5;'));
  await waitFor(
    'the type error',
    () => lines.some((l) => l.startsWith('✗ reloaded (hook.ts): hook.ts does not type-check')),
    Boolean,
    { timeoutMs: 30_000 },
  );
  expect(
    lines.some((l) => /^hook\.ts:\d+:11 - error TS2322: Type 'number' is not assignable to type 'string'\.$/.test(l)),
  ).toBe(true);
  expect(((await call(url)) as { saved?: number }).saved).toBe(2);
  await writeFile(join(fn, 'hook.ts'), good);
  await waitFor(
    'the mended hook',
    () => lines.some((l) => /^✓ reloaded \(hook\.ts\): devfn v5 ready/.test(l)),
    Boolean,
    { timeoutMs: 30_000 },
  );

  // A new model (other weights): export.py saved, then run. Saving export.py changes nothing
  // deployed; the model.pt it writes reloads once, as v6.
  const exporter = await readFile(join(fn, 'export.py'), 'utf8');
  await writeFile(join(fn, 'export.py'), exporter.replace('manual_seed(0)', 'manual_seed(7)'));
  execFileSync(PYTHON, ['export.py'], { cwd: fn });
  await waitFor(
    'the model reloaded',
    () => lines.some((l) => /^✓ reloaded \(model\.pt\): devfn v6 ready/.test(l)),
    Boolean,
    {
      timeoutMs: 30_000,
    },
  );
  await waitFor(
    'the new model answering',
    () => call(url),
    (r) => maxAbsDiff(r.outputs[0]!, v1.outputs[0]!) > 1e-3,
  );
  const v3 = await call(url);
  expect(maxAbsDiff(v3.outputs[0]!, reference(join(fn, 'model.pt')))).toBeLessThan(1e-5);
  expect(lines.filter((l) => l.includes('export.py'))).toEqual([]);

  child.kill('SIGINT');
  const code = await new Promise<number | null>((done) => child!.once('exit', done));
  expect(code).toBe(0);
}, 150_000);
