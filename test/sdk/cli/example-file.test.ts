/**
 * The smoke request from a file next to the spec (`exampleFile`), through the CLI against a node: a
 * hook that reads text rows answers the file's row before v1 takes traffic (the answer python3-torch
 * gives); a new version whose file the hook cannot read fails its smoke request and traffic stays on
 * v1; a spec that names a file outside its folder, or one that is not there, is refused at deploy.
 */
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, expect, it } from 'vitest';

import { cliIn } from '../../helpers/cli.js';
import { testNode } from '../../helpers/node.js';
import { maxAbsDiff } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-example-file-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const { hearth, parsed } = cliIn(dir);

/** A hook that takes text/csv rows ("1,2,3,4") and logs what it was sent. */
const CSV_HOOK = `import { defineHook, InvalidInputError } from '@hearth/sdk';

export default defineHook({
  pre(request) {
    if (request.kind !== 'bytes') throw new InvalidInputError('send text/csv rows');
    console.log(\`pre got \${request.contentType}\`);
    const rows = new TextDecoder().decode(request.bytes).trim().split('\\n').map((line) => line.split(',').map(Number));
    if (rows.some((r) => r.length !== 4 || r.some(Number.isNaN))) throw new Error('each row is 4 numbers');
    return { x: { dtype: 'FP32', shape: [rows.length, 4], data: Float32Array.from(rows.flat()) } };
  },
  post(outputs) {
    return { outputs: Array.from(outputs.y!.data as Float32Array) };
  },
});
`;

it('sends the spec’s exampleFile as the smoke request, and fails a version that cannot answer it', async () => {
  const node = await testNode(join(dir, 'node'));
  const url = node.httpUrl;
  try {
    const fn = join(dir, 'csv');
    const { name } = await parsed<{ name: string }>(url, 'init', fn);
    const spec = (await readFile(join(fn, 'hearth.yaml'), 'utf8')).replace(/^example: .*$/m, 'exampleFile: row.csv');
    await writeFile(join(fn, 'hearth.yaml'), spec);
    await writeFile(join(fn, 'hook.ts'), CSV_HOOK);
    await writeFile(join(fn, 'row.csv'), '1,2,3,4\n');
    expect(await parsed<{ version: number; status: string }>(url, 'deploy', fn)).toMatchObject({
      version: 1,
      status: 'ready',
    });
    // The smoke request was the file's bytes, with the content type of its extension.
    expect((await hearth(url, 'logs', name, '--version', '1')).out).toMatch(/ hook +info +pre got text\/csv/);
    const answer = await fetch(`${url}/fn/${name}`, {
      method: 'POST',
      headers: { 'content-type': 'text/csv' },
      body: '1,2,3,4',
    });
    const reference = pythonForward(join(fn, 'model.pt'), [
      { dtype: 'FP32', shape: [1, 4], data: Float32Array.from([1, 2, 3, 4]) },
    ]).outputs[0]!.data as Float32Array;
    expect(
      maxAbsDiff(Float32Array.from(((await answer.json()) as { outputs: number[] }).outputs), reference),
    ).toBeLessThan(1e-6);

    // A file this hook cannot read: v2 fails its smoke request, v1 keeps the traffic.
    await writeFile(join(fn, 'row.csv'), '1,2,three,4\n');
    const failed = await hearth(url, 'deploy', fn);
    expect(failed.code).toBe(1);
    expect(failed.err).toMatch(
      /v2 failed to load: the smoke request \(the spec's example\) failed: .*each row is 4 numbers/,
    );
    const versions = await parsed<{ version: number; status: string; traffic: number }[]>(url, 'versions', name);
    expect(versions.map((v) => [v.version, v.status, v.traffic])).toEqual([
      [1, 'ready', 100],
      [2, 'failed', 0],
    ]);

    // A file that is not there, or a link out of the folder, is refused before anything is made.
    await rm(join(fn, 'row.csv'));
    expect((await hearth(url, 'deploy', fn)).err).toMatch(/exampleFile row\.csv is not a file in /);
    await writeFile(join(dir, 'outside.csv'), '1,2,3,4\n');
    await symlink(join(dir, 'outside.csv'), join(fn, 'row.csv'));
    expect((await hearth(url, 'deploy', fn)).err).toMatch(/the example file .*outside/);
    expect((await parsed<unknown[]>(url, 'versions', name)).length).toBe(2);

    // As a tenant with a deploy key: naming another artifact (this function's model, or another
    // function's example) as the example, to read its bytes back through one's own hook, is refused.
    const info = await parsed<{ versions: { spec: object; artifacts: { model: string; example?: string } }[] }>(
      url,
      'describe',
      name,
    );
    const { spec: v1spec, artifacts } = info.versions[0]!;
    for (const [as, example] of [
      ['thief', artifacts.model],
      ['thief', artifacts.example!],
    ] as const) {
      const stolen = await fetch(`${url}/api/v1/functions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ spec: { ...v1spec, name: as }, artifacts: { model: artifacts.model, example } }),
      });
      expect(stolen.status).toBe(400);
      expect(((await stolen.json()) as { error: string }).error).toMatch(
        new RegExp(`artifacts\\.example ${example} is not an example file made for thief`),
      );
    }
    expect((await parsed<{ name: string }[]>(url, 'ls')).map((f) => f.name)).toEqual([name]);
  } finally {
    await node.close();
  }
}, 180_000);
