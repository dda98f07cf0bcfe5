/**
 * The `hearth` CLI end to end, as a user runs it (the package's bin, a child process) against a
 * real node — embedded default, then Redis + S3: init → deploy → invoke → traffic → rollback →
 * scale (in place) → async → delete, with the --json outputs parsed and the answers compared with
 * python3-torch's. A deploy of an unchanged model sends no model bytes (counted at the server).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../../platform/node/index.js';
import { cliIn } from '../../helpers/cli.js';
import { HEARTH_CLI, PYTHON, REPO_ROOT, TRITON_REPO } from '../../helpers/fixtures.js';
import { dropKeys, testNode, uniquePrefix } from '../../helpers/node.js';
import { maxAbsDiff } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';
import { startS3 } from '../../helpers/s3.js';

const run = promisify(execFile);
const dir = await mkdtemp(join(tmpdir(), 'hearth-cli-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const { hearth, parsed } = cliIn(dir);
const uploadedBytes = async (node: HearthNode): Promise<number> => {
  const text = await (await fetch(node.metricsUrl)).text();
  return Number(/^hearth_artifact_upload_bytes_total (\S+)$/m.exec(text)?.[1] ?? 'NaN');
};

/** One lifecycle against its own node and folders: the two run side by side (it.concurrent). */
function lifecycle(label: string, start: () => Promise<{ node: HearthNode; close(): Promise<void> }>): void {
  it.concurrent(`takes a function from init to delete (${label})`, { timeout: 300_000 }, async () => {
    const { node, close } = await start();
    const url = node.httpUrl;
    try {
      const fn = join(dir, `demo-${label.split(' ')[0]}`);
      const init = await parsed<{ name: string; model: boolean; python: string }>(url, 'init', fn);
      expect(init.model).toBe(true);
      // It says which Python made model.pt (the tests name theirs with HEARTH_PYTHON).
      expect(init.python).toBe(PYTHON);
      expect(existsSync(join(fn, 'model.pt'))).toBe(true);

      const first = await parsed<{
        name: string;
        version: number;
        status: string;
        url: string;
        uploaded: { model: boolean };
      }>(url, 'deploy', fn, '--wait');
      expect(first).toMatchObject({
        name: init.name,
        version: 1,
        status: 'ready',
        url: `${url}/fn/${init.name}`,
        uploaded: { model: true },
      });

      const x = [
        [1, 2, 3, 4],
        [0.5, -1, 0, 2],
      ];
      const reference = pythonForward(join(fn, 'model.pt'), [
        { dtype: 'FP32', shape: [2, 4], data: Float32Array.from(x.flat()) },
      ]).outputs[0]!.data as Float32Array;
      const answer = await parsed<{ outputs: number[][] }>(
        url,
        'invoke',
        init.name,
        '--data',
        JSON.stringify({ inputs: x }),
      );
      expect(maxAbsDiff(Float32Array.from(answer.outputs.flat()), reference)).toBeLessThan(1e-6);
      // The body from a file (@file, as curl takes it) and from stdin (-).
      const request = join(dir, `request-${label.split(' ')[0]}.json`);
      await writeFile(request, JSON.stringify({ inputs: x }));
      const fromFile = await parsed<{ outputs: number[][] }>(url, 'invoke', init.name, '--data', `@${request}`);
      expect(fromFile.outputs).toEqual(answer.outputs);
      const fromStdin = await new Promise<string>((resolve, reject) => {
        const child = execFile(
          HEARTH_CLI,
          ['--url', url, '--json', 'invoke', init.name, '--data', '-'],
          { cwd: dir },
          (error, stdout) => (error ? reject(error) : resolve(stdout)),
        );
        child.stdin!.end(JSON.stringify({ inputs: x }));
      });
      expect((JSON.parse(fromStdin) as { outputs: number[][] }).outputs).toEqual(answer.outputs);

      // Unchanged: HEAD says the node has the model, so no model bytes are sent.
      const bytes = await uploadedBytes(node);
      const second = await parsed<{ version: number; uploaded: { model: boolean; hook: boolean } }>(url, 'deploy', fn);
      expect(second).toMatchObject({ version: 2, uploaded: { model: false, hook: false } });
      expect(await uploadedBytes(node)).toBe(bytes);

      expect(
        (await parsed<{ traffic: Record<string, number> }>(url, 'traffic', init.name, '1=10', '2=90')).traffic,
      ).toEqual({ 1: 10, 2: 90 });
      // Rollback undoes the last traffic change (the canary split): v2 takes all traffic again.
      expect(await parsed(url, 'rollback', init.name)).toMatchObject({ from: { 1: 10, 2: 90 }, traffic: { 2: 100 } });
      const versions = await parsed<{ version: number; status: string; traffic: number }[]>(url, 'versions', init.name);
      expect(versions.map((v) => [v.version, v.status, v.traffic])).toEqual([
        [1, 'ready', 0],
        [2, 'ready', 100],
      ]);

      // Scaling changes in place: no new version, the split stays.
      const scaled = await parsed<{ versions: { version: number; scaling: object }[] }>(
        url,
        'scale',
        init.name,
        '--min',
        '1',
        '--max',
        '2',
      );
      expect(scaled.versions).toEqual([
        { version: 2, scaling: expect.objectContaining({ minInstances: 1, maxInstances: 2 }) },
      ]);
      const described = await parsed<{
        traffic: Record<string, number>;
        versions: { version: number; spec: { scaling: { minInstances: number } } }[];
      }>(url, 'describe', init.name);
      expect(described.traffic).toEqual({ 2: 100 });
      expect(described.versions.map((v) => [v.version, v.spec.scaling.minInstances])).toEqual([
        [1, 0],
        [2, 1],
      ]);

      const job = await parsed<{ status: string; result: { json: { outputs: number[][] } } }>(
        url,
        'invoke',
        init.name,
        '--async',
        '--wait',
        '--data',
        JSON.stringify({ inputs: x }),
      );
      expect(job.status).toBe('succeeded');
      expect(maxAbsDiff(Float32Array.from(job.result.json.outputs.flat()), reference)).toBeLessThan(1e-6);

      const top = await parsed<{ function: string; state: string; p99Ms: number | null }[]>(url, 'top', '--once');
      const serving = top.find((p) => p.function === init.name && p.state === 'warm');
      expect(serving?.p99Ms).toBeGreaterThan(0);
      expect((await parsed<{ name: string }[]>(url, 'ls')).map((f) => f.name)).toEqual([init.name]);
      // People's view fits 80 columns.
      const topText = await hearth(url, 'top', '--once');
      expect(topText.code, topText.err).toBe(0);
      expect(topText.out).toContain(init.name);
      for (const line of topText.out.split('\n')) expect(line.length, line).toBeLessThanOrEqual(80);
      // A function with no pool (unloaded here) is listed too, as cold.
      expect((await fetch(`${url}/v2/repository/models/${init.name}/unload`, { method: 'POST' })).status).toBe(200);
      const cold = await parsed<{ function: string; state: string }[]>(url, 'top', '--once');
      expect(cold).toContainEqual(expect.objectContaining({ function: init.name, state: 'cold' }));

      // The function's own log: its versions' lifecycle, one JSON entry a line with --json.
      const logged = await hearth(url, '--json', 'logs', init.name, '--version', '1');
      expect(logged.code, logged.err).toBe(0);
      const entries = logged.out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { version: number; source: string; msg: string });
      expect(entries.some((e) => e.version === 1 && e.source === 'lifecycle' && e.msg === 'warm')).toBe(true);
      expect((await hearth(url, 'logs', init.name)).out).toMatch(/v2 lifecycle +info +warm/);

      // People get tables and messages that name the fix; usage errors exit 2, failures 1.
      expect((await hearth(url, 'ls')).out).toContain(init.name);
      const unknown = await hearth(url, 'invoke', 'nope', '--data', '{}');
      expect(unknown.code).toBe(1);
      expect(unknown.err).toMatch(/nope.*FUNCTION_NOT_FOUND/);
      expect((await hearth(url, 'traffic', init.name, 'ninety')).code).toBe(2);
      expect((await hearth(url, 'frobnicate')).code).toBe(2);
      const emptyDir = join(dir, `empty-${label.split(' ')[0]}`);
      await mkdir(emptyDir);
      const empty = await hearth(url, 'deploy', emptyDir);
      expect(empty.code).toBe(1);
      expect(empty.err).toContain('hearth init');
      const broken = join(dir, `broken-${label.split(' ')[0]}`);
      await mkdir(broken);
      await writeFile(
        join(broken, 'hearth.yaml'),
        'name: broken\nmodel: model.pt\ninputs: [{ name: x, dtype: FP33, dims: [4] }]\noutputs: [{ name: y, dtype: FP32, dims: [3] }]\n',
      );
      const invalid = await hearth(url, 'deploy', broken);
      expect(invalid.code).toBe(1);
      expect(invalid.err).toMatch(/inputs\[0\]\.dtype/);

      // Without a terminal to ask on, delete wants --yes (a usage error, nothing deleted).
      const unasked = await hearth(url, 'delete', init.name);
      expect(unasked.code).toBe(2);
      expect(unasked.err).toMatch(/add --yes/);
      expect((await parsed<{ name: string }[]>(url, 'ls')).map((f) => f.name)).toEqual([init.name]);
      await parsed(url, 'delete', init.name, '--yes');
      expect(await parsed<unknown[]>(url, 'ls')).toEqual([]);
    } finally {
      await close();
    }
  });
}

describe('the hearth CLI', () => {
  it('says its version, the package version', async () => {
    const pkg = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    const r = await run(HEARTH_CLI, ['--version']);
    expect(r.stdout.trim()).toBe(pkg.version);
  });

  it("shows an example and the global options in every verb's help", async () => {
    const top = await run(HEARTH_CLI, ['--help']);
    const verbs = [...top.stdout.matchAll(/^ {2}([a-z]+) /gm)].map((m) => m[1]!).filter((v) => v !== 'help');
    expect(verbs).toEqual(expect.arrayContaining(['deploy', 'dev', 'map', 'secrets', 'logs', 'scale', 'rollback']));
    // All at once: each is a CLI start, and two cores take them side by side.
    const helps = await Promise.all(
      verbs.map(async (verb) => ({
        verb,
        ...(await run(HEARTH_CLI, [verb, '--help'])),
      })),
    );
    for (const { verb, stdout } of helps) {
      expect(stdout, verb).toMatch(/Examples:\n {2}hearth /);
      expect(stdout, verb).toContain('--api-key <key>');
    }
  }, 60_000);

  it('deploys every model folder of a Triton repository root, a line each and a summary', async () => {
    const node = await testNode(join(dir, 'repository'));
    try {
      const repo = join(dir, 'model_repository');
      for (const folder of ['reshape_model', 'simple.shuffled_Args', 'classifier.v1'])
        await cp(join(TRITON_REPO, folder), join(repo, folder), { recursive: true });
      await mkdir(join(repo, 'notes'));
      await writeFile(join(repo, 'notes', 'README.md'), 'not a model folder');
      const r = await hearth(node.httpUrl, 'deploy', repo);
      expect(r.code, r.err).toBe(0);
      for (const name of ['reshape_model', 'simple.shuffled_Args', 'classifier.v1'])
        expect(r.err).toMatch(new RegExp(`^✓ ${name.replace('.', '\\.')}: \\S+ v1 ready`, 'm'));
      expect(r.out.trim()).toBe(`deployed 3 of 3 model folders from ${repo}`);
      expect((await parsed<{ name: string }[]>(node.httpUrl, 'ls')).map((f) => f.name).sort()).toEqual([
        'classifier.v1',
        'reshape_model',
        'simple.shuffled_Args',
      ]);
      // One broken folder fails alone: the others deploy, the exit code says it.
      await mkdir(join(repo, 'broken'));
      await writeFile(
        join(repo, 'broken', 'config.pbtxt'),
        'platform: "pytorch_libtorch"\ninput [ { name: "x" data_type: TYPE_FP33 dims: [ 4 ] } ]\n',
      );
      const again = await hearth(node.httpUrl, 'deploy', repo);
      expect(again.code).toBe(1);
      expect(again.err).toMatch(/^✗ broken: /m);
      expect(again.out.trim()).toBe(`deployed 3 of 4 model folders from ${repo} (1 failed)`);
    } finally {
      await node.close();
    }
  }, 120_000);

  lifecycle('embedded default', async () => {
    const node = await testNode(join(dir, 'embedded'));
    return { node, close: () => node.close() };
  });

  lifecycle('Redis and S3', async () => {
    const s3 = await startS3();
    const prefix = uniquePrefix();
    const node = await testNode(join(dir, 'cluster'), {
      REDIS_URL: 'redis://127.0.0.1:6379',
      HEARTH_REDIS_PREFIX: prefix,
      HEARTH_S3_BUCKET: s3.bucket,
      HEARTH_S3_ENDPOINT: s3.endpoint,
    });
    return {
      node,
      async close() {
        await node.close();
        await s3.close();
        await dropKeys(prefix);
      },
    };
  });
});
