/**
 * The GPU kit, simulated here on the CPU: built as `npm run gpu:prepare` builds it, copied into an
 * empty folder outside the repository (no node_modules but the kit's own piscina and isolated-vm),
 * its node started from the bundle, a model deployed and invoked (checked against python3-torch),
 * a hook run in its isolate, the GPU metrics absent; then seed 000's benchmark script run as the GPU
 * machine runs it, on the CPU with short cells and concurrency 1, 4 and 8 (ResNet-50 at 64 on two
 * cores takes ten seconds to drain a cell; run.sh on the CPU runs 1, 16 and 64), and its
 * gpu-serve.json checked.
 */
import { execFile } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DEFAULT_ADDON_PATH } from '../../runtime/engine/index.js';
import { buildKit, KIT_BENCH, KIT_MAIN, packKit } from '../gpu/kit.js';
import { modelPath, PYTHON, REPO_ROOT } from '../helpers/fixtures.js';
import type { NodeProcess } from '../helpers/node.js';
import { deployFixture, spawnNode } from '../helpers/node.js';
import { maxAbsDiff } from '../helpers/random.js';
import { pythonForward } from '../helpers/reference.js';
import { SMALL_SPEC, SMALL_X } from '../helpers/specs.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'hearth-kit-'));
// Runners run as users of their own (the node is root here): the kit must be readable to them.
chmodSync(dir, 0o755);
const kit = join(dir, 'run', 'kit');
/** What the kit's processes get: the addon built here (the GPU machine builds its own), no loaders. */
const env = { HEARTH_NATIVE_ADDON: DEFAULT_ADDON_PATH, NODE_OPTIONS: '', NODE_PATH: '' };

/**
 * What travels to a GPU machine besides the kit: the working tree git tracks, the engine's test and
 * benchmark bundles and headers (~1.3 MiB), and Node's binary xz'd (Node 20's: ~23 MiB; a budget).
 */
const NODE_XZ_BUDGET = 28 * 2 ** 20;
const OTHERS = 2 * 2 ** 20;
/** The device tool carries 64 MiB; this fails well before (room for the tree and Node to grow). */
const CARRY_LIMIT = 48 * 2 ** 20;

describe('the GPU kit, on the CPU', () => {
  let node: NodeProcess;
  let packed = 0;
  beforeAll(async () => {
    const built = join(dir, 'built');
    const { bytes } = await buildKit(built);
    expect(bytes).toBeLessThan(32 * 2 ** 20);
    packed = packKit(built, join(dir, 'kit.tar.xz'));
    cpSync(built, kit, { recursive: true });
    node = await spawnNode(join(dir, 'data'), env, undefined, KIT_MAIN(kit));
  }, 120_000);
  afterAll(async () => {
    node?.child.kill('SIGKILL');
    await node?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it("travels well within the device's carry limit, packed as npm run gpu:prepare packs it", async () => {
    const { stdout } = await run('git', ['ls-files', '-z'], { cwd: REPO_ROOT, maxBuffer: 64 * 2 ** 20 });
    const tree = stdout
      .split('\0')
      .filter(Boolean)
      .reduce((n, f) => n + (existsSync(join(REPO_ROOT, f)) ? statSync(join(REPO_ROOT, f)).size : 0), 0);
    expect(packed).toBeGreaterThan(0);
    expect(packed + tree + NODE_XZ_BUDGET + OTHERS).toBeLessThan(CARRY_LIMIT);
  });

  it('carries no node_modules but its own two packages and prebuilt entries', () => {
    expect(readdirSync(join(dir, 'run'))).toEqual(['kit']);
    expect(readdirSync(join(kit, 'node_modules')).sort()).toEqual(['.hearth', 'isolated-vm', 'piscina']);
    expect(existsSync(join(kit, 'node_modules', '.hearth', 'runner.mjs'))).toBe(true);
  });

  it('starts a node from the bundle that deploys, answers as python3-torch does, runs a hook, and exports no GPU metrics', async () => {
    const r = await deployFixture(node.url, SMALL_SPEC, { model: 'small' });
    expect(r.status, await r.clone().text()).toBe(201);
    const answer = (await (
      await fetch(`${node.url}/fn/small`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: { x: SMALL_X } }),
      })
    ).json()) as { outputs: { y: number[][] } };
    const reference = pythonForward(modelPath('small'), [
      { dtype: 'FP32', shape: [SMALL_X.length, 4], data: Float32Array.from(SMALL_X.flat()) },
    ]).outputs[0]!.data as Float32Array;
    expect(maxAbsDiff(Float32Array.from(answer.outputs.y.flat()), reference)).toBeLessThan(1e-5);
    // A hook runs in an isolate in a runner process: both come from the kit's prebuilt entries.
    const hooked = await deployFixture(
      node.url,
      { ...SMALL_SPEC, name: 'chatty', hook: 'hook.ts' },
      { model: 'small', hook: 'chatty' },
    );
    expect(hooked.status).toBe(201);
    const viaHook = await fetch(`${node.url}/fn/chatty`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ x: SMALL_X, tag: 'kit' }),
    });
    expect(viaHook.status).toBe(200);
    // The console is served from the kit too.
    expect((await fetch(`${node.url}/console/`)).status).toBe(200);
  }, 60_000);

  it("runs seed 000's benchmark script on the CPU and writes gpu-serve.json", async () => {
    const out = join(dir, 'out');
    const { stdout } = await run(
      process.execPath,
      [
        KIT_BENCH(kit),
        '--model',
        modelPath('resnet50'),
        '--device',
        'cpu',
        '--quick',
        '--seconds',
        '1',
        '--concurrency',
        '1,4,8',
        '--out',
        out,
        '--python',
        PYTHON,
        '--threads',
        '2',
      ],
      { cwd: join(dir, 'run'), env: { ...process.env, ...env }, timeout: 240_000 },
    );
    const result = JSON.parse(readFileSync(join(out, 'gpu-serve.json'), 'utf8')) as {
      rows: {
        route: string;
        concurrency: number;
        req_per_s: number;
        p50_ms: number;
        mean_batch: number;
        errors: number;
      }[];
      raw_b1_per_s: number;
      raw_b16_per_s: number;
      raw_best_per_s: number;
      gpu_metrics: Record<string, number>;
      config: string;
    };
    expect(result.rows.map((r) => `${r.route}@${r.concurrency}`)).toEqual([
      'kserve-binary-http@1',
      'kserve-binary-http@4',
      'kserve-binary-http@8',
      'grpc@1',
      'grpc@4',
      'grpc@8',
    ]);
    for (const row of result.rows) {
      expect(row.errors, JSON.stringify(row)).toBe(0);
      expect(row.req_per_s).toBeGreaterThan(0);
      // One request at a time is a batch of one; eight at once on two instances are batched.
      if (row.concurrency === 1) expect(row.mean_batch).toBe(1);
      if (row.concurrency === 8) expect(row.mean_batch).toBeGreaterThan(1);
    }
    expect(result.raw_b1_per_s).toBeGreaterThan(0);
    expect(result.raw_b16_per_s).toBeGreaterThan(0);
    expect(result.raw_best_per_s).toBeGreaterThanOrEqual(Math.max(result.raw_b1_per_s, result.raw_b16_per_s));
    expect(result.config).toContain('kind: KIND_GPU');
    expect(result.gpu_metrics).toEqual({});
    expect(stdout).toContain('gpu metrics: none (no GPU)');
    expect(readFileSync(join(out, 'node.log'), 'utf8')).toContain('hearth listening');
  }, 300_000);
});
