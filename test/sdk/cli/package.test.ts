/**
 * The packages as a user gets them: `npm pack` of @hearth/cli and @hearth/sdk (sdk/packages/build.ts),
 * the CLI installed globally into an empty prefix with no registry (--offline), and a function folder
 * outside the repository that depends on the SDK tarball and on an npm package of its own, which
 * the hook imports: init → deploy → invoke (the answer against python3-torch's) → logs → delete.
 * The SDK's client runs from that folder too, and its type declarations check the hook with tsc.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, expect, it } from 'vitest';

import { buildPackages } from '../../../sdk/packages/build.js';
import { PYTHON, REPO_ROOT } from '../../helpers/fixtures.js';
import { testNode } from '../../helpers/node.js';
import { maxAbsDiff } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';

const run = promisify(execFile);
const work = await mkdtemp(join(tmpdir(), 'hearth-package-'));
afterAll(() => rm(work, { recursive: true, force: true }));

const npm = (cwd: string, ...args: string[]) => run('npm', [...args, '--offline', '--no-audit', '--no-fund'], { cwd });

it('installs the packed CLI and SDK with no registry and runs a function folder outside the repository', async () => {
  const { cli, sdk } = await buildPackages(join(work, 'packages'));
  const prefix = join(work, 'prefix');
  await npm(work, 'install', '--global', '--prefix', prefix, cli);
  const bin = join(prefix, 'bin', 'hearth');
  // The installed binary is plain JavaScript: no tsx, no TypeScript at run time.
  expect(
    await readFile(join(prefix, 'lib', 'node_modules', '@hearth', 'cli', 'dist', 'hearth.mjs'), 'utf8'),
  ).not.toMatch(/from ['"]tsx/);

  const node = await testNode(join(work, 'data'));
  const hearth = async (...args: string[]) => {
    const { stdout } = await run(bin, ['--url', node.httpUrl, ...args], {
      cwd: work,
      env: { ...process.env, HEARTH_PYTHON: PYTHON, PATH: `${join(prefix, 'bin')}:${process.env.PATH}` },
    });
    return stdout;
  };
  try {
    const started = performance.now();
    expect((await hearth('--version')).trim()).toBe(
      (JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version,
    );
    console.log(`hearth --version from the installed package: ${(performance.now() - started).toFixed(0)} ms`);

    const fn = join(work, 'doubler');
    const init = JSON.parse(await hearth('--json', 'init', fn)) as { name: string; files: string[]; model: boolean };
    expect(init.model).toBe(true);
    expect(init.files).toEqual(expect.arrayContaining(['package.json', 'tsconfig.json', 'hook.ts', 'model.pt']));

    // An npm package of the function's own, which the hook imports (resolved from the folder).
    const own = join(work, 'vendor', 'twice');
    await mkdir(own, { recursive: true });
    await writeFile(
      join(own, 'package.json'),
      JSON.stringify({ name: 'twice', version: '1.0.0', type: 'module', main: 'index.js', types: 'index.d.ts' }),
    );
    await writeFile(join(own, 'index.js'), 'export const twice = (rows) => rows.map((r) => r.map((v) => v * 2));\n');
    await writeFile(join(own, 'index.d.ts'), 'export declare function twice(rows: number[][]): number[][];\n');
    await npm(fn, 'install', sdk, own);
    await writeFile(
      join(fn, 'hook.ts'),
      `import { defineHook, InvalidInputError, tensorFromJson, tensorToJson } from '@hearth/sdk';
import { twice } from 'twice';

export default defineHook({
  pre(request) {
    if (request.kind !== 'json') throw new InvalidInputError('send JSON');
    console.log('rows', (request.json as { inputs: unknown[] }).inputs.length);
    return { x: tensorFromJson('FP32', (request.json as { inputs: unknown }).inputs) };
  },
  post(outputs) {
    return { outputs: twice(tensorToJson(outputs.y!) as number[][]) };
  },
});
`,
    );
    // The SDK's declarations type the hook (the repository's TypeScript, the folder's tsconfig).
    await run(process.execPath, [join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', fn]);

    const deployed = JSON.parse(await hearth('--json', 'deploy', fn, '--wait')) as { status: string };
    expect(deployed.status).toBe('ready');
    const x = [
      [1, 2, 3, 4],
      [-1, 0.5, 0, 2],
    ];
    const reference = pythonForward(join(fn, 'model.pt'), [
      { dtype: 'FP32', shape: [2, 4], data: Float32Array.from(x.flat()) },
    ]).outputs[0]!.data as Float32Array;
    const answer = JSON.parse(await hearth('--json', 'invoke', init.name, '--data', JSON.stringify({ inputs: x }))) as {
      outputs: number[][];
    };
    expect(
      maxAbsDiff(
        Float32Array.from(answer.outputs.flat()),
        reference.map((v) => v * 2),
      ),
    ).toBeLessThan(1e-5);

    // The SDK's client, imported by name from the function folder.
    await writeFile(
      join(fn, 'call.mjs'),
      `import { Hearth } from '@hearth/sdk';
const r = await new Hearth({ url: process.argv[2] }).invoke(${JSON.stringify(init.name)}, { inputs: ${JSON.stringify(x)} });
console.log(JSON.stringify(r.json()));
`,
    );
    const { stdout } = await run(process.execPath, ['call.mjs', node.httpUrl], { cwd: fn });
    expect(JSON.parse(stdout)).toEqual(answer);

    expect(await hearth('logs', init.name)).toMatch(/hook\s+info\s+rows 2/);
    await hearth('delete', init.name, '--yes');
    expect(JSON.parse(await hearth('--json', 'ls'))).toEqual([]);
  } finally {
    await node.close();
  }
}, 300_000);
