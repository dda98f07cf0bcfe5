/**
 * The node's budgets for its runners, and what a runner sees of the host's: a runnerMemoryMb past
 * what the node has is refused at deploy; the runners' charges (each its usage, at least its start, at most its limit) stay within the
 * node's allocatable (HEARTH_NODE_MEMORY_MB less HEARTH_NODE_RESERVED_MB), a start past it refused
 * with the numbers; each runner is the OOM killer's first choice and has a CPU weight of its own;
 * a runner sees under /sys/fs/cgroup its own cgroup and no other runner's; and a node that ends on
 * SIGTERM leaves no runner folder nor cgroup behind. Read from the host's /proc and /sys/fs/cgroup.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { hookWorkerFile, runnerEntryFile } from '../../runtime/index.js';
import { modelPath } from '../helpers/fixtures.js';
import type { NodeProcess } from '../helpers/node.js';
import { postFunction, spawnNode, upload } from '../helpers/node.js';

const root = process.getuid?.() === 0;
const ADMIN = 'budgets-admin-key-01';
const auth = { authorization: `Bearer ${ADMIN}` };
const base = await mkdtemp('/var/tmp/hearth-budgets-');
await chmod(base, 0o755);
afterAll(() => rm(base, { recursive: true, force: true }));

const SMALL = {
  maxBatchSize: 8,
  instances: { device: 'cpu' },
  model: 'model.pt',
  inputs: [{ name: 'x', dtype: 'FP32', dims: [4] }],
  outputs: [{ name: 'y', dtype: 'FP32', dims: [3] }],
};
const MIB = 2 ** 20;

/** The node's runners, from the host's /proc: each pid with its cgroup paths by controller. */
async function runnersOf(nodePid: number): Promise<{ pid: number; cgroups: Map<string, string> }[]> {
  const found = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const text = await readFile(`/proc/${name}/cgroup`, 'utf8').catch(() => '');
    const cgroups = new Map<string, string>();
    for (const line of text.split('\n')) {
      const [, controllers, path] = line.split(':');
      if (path !== undefined) for (const c of controllers!.split(',')) cgroups.set(c, path);
    }
    // The runner itself, not its hearth-jail (which stays in the node's cgroups).
    if (new RegExp(`/hearth-${nodePid}/r\\d+$`).test(cgroups.get('memory') ?? ''))
      found.push({ pid: Number(name), cgroups });
  }
  return found;
}

/** The memory limits of the node's runners that have one (the spare has none), in MiB, sorted. */
async function limitsOf(nodePid: number): Promise<number[]> {
  const limits = [];
  for (const r of await runnersOf(nodePid)) {
    const limit = await readFile(`/sys/fs/cgroup/memory${r.cgroups.get('memory')}/memory.limit_in_bytes`, 'utf8');
    if (Number(limit) < 2 ** 50) limits.push(Number(limit) / MIB);
  }
  return limits.sort((a, b) => a - b);
}

/** The runner whose memory cgroup's limit is `mb` MiB (its function's limits.runnerMemoryMb). */
async function runnerWithLimit(nodePid: number, mb: number) {
  for (const r of await runnersOf(nodePid)) {
    const limit = await readFile(`/sys/fs/cgroup/memory${r.cgroups.get('memory')}/memory.limit_in_bytes`, 'utf8');
    if (Number(limit) === mb * MIB) return r;
  }
  throw new Error(`no runner of node ${nodePid} has a ${mb} MiB limit`);
}

describe.skipIf(!root || !existsSync('/sys/fs/cgroup/memory'))('runner budgets on a node as root (cgroup v1)', () => {
  let node: NodeProcess;
  const deploy = async (name: string, spec: object, model: Uint8Array) => {
    const r = await postFunction(
      node.url,
      { spec: { ...spec, name }, artifacts: { model: await upload(node.url, model, auth) } },
      auth,
    );
    return { status: r.status, body: (await r.json()) as { status: string; reason?: string; error?: string } };
  };
  const small = async () => new Uint8Array(await readFile(modelPath('small')));
  const logs = async (name: string) =>
    JSON.stringify(
      await (await fetch(`${node.url}/api/v1/functions/${name}/logs?limit=1000`, { headers: auth })).json(),
    );

  beforeAll(async () => {
    const dataDir = join(base, 'data');
    await mkdir(dataDir, { recursive: true });
    node = await spawnNode(dataDir, {
      HEARTH_API_KEYS: `${ADMIN}:admin`,
      HEARTH_RUNNER_ENTRY: await runnerEntryFile(),
      HEARTH_HOOK_WORKER: await hookWorkerFile(),
      // 1024 MiB allocatable to runners: two of 512 MiB fit, a third does not. (A runner is charged
      // its usage, at least its start's 512 MiB, at most its limit: with a 512 MiB limit, 512 MiB.)
      HEARTH_NODE_MEMORY_MB: '1536',
      HEARTH_NODE_RESERVED_MB: '512',
    });
  }, 120_000);
  afterAll(() => {
    node?.child.kill('SIGKILL');
  });

  it('refuses at deploy a limits.runnerMemoryMb past what the node has, naming it', async () => {
    const r = await deploy('too-big', { ...SMALL, limits: { runnerMemoryMb: 1_048_576 } }, await small());
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(
      /limits\.runnerMemoryMb 1048576 is more than this node's 1024 MiB allocatable to runners \(HEARTH_NODE_MEMORY_MB less HEARTH_NODE_RESERVED_MB\)/,
    );
  });

  it("makes each runner the OOM killer's first choice, with a CPU weight of its own", async () => {
    expect((await deploy('first', { ...SMALL, limits: { runnerMemoryMb: 512 } }, await small())).status).toBe(201);
    const runner = await runnerWithLimit(node.child.pid!, 512);
    expect((await readFile(`/proc/${runner.pid}/oom_score_adj`, 'utf8')).trim()).toBe('1000');
    // The node itself keeps its own (the OOM killer takes a runner first).
    expect((await readFile(`/proc/${node.child.pid}/oom_score_adj`, 'utf8')).trim()).toBe('0');
    const cpu = runner.cgroups.get('cpu');
    if (!existsSync('/sys/fs/cgroup/cpu/cpu.shares')) return; // no v1 cpu controller: the report says so
    expect(cpu).toMatch(new RegExp(`/hearth-${node.child.pid}/r\\d+$`));
    expect((await readFile(`/sys/fs/cgroup/cpu${cpu}/cpu.shares`, 'utf8')).trim()).toBe('1024');
    // Together, the runners weigh as many cores as the host has (not one process's share).
    expect((await readFile(`/sys/fs/cgroup/cpu${dirname(cpu!)}/cpu.shares`, 'utf8')).trim()).toBe(
      String(1024 * availableParallelism()),
    );
  });

  it("shows a runner its own cgroup under /sys/fs/cgroup, and no other runner's", async () => {
    // What the runner sees, read from the host through its root (/proc/PID/root: its mount
    // namespace's view). A model cannot look for itself: the operator check refuses every file op.
    const first = await runnerWithLimit(node.child.pid!, 512);
    const seen = `/proc/${first.pid}/root/sys/fs/cgroup/memory`;
    const own = first.cgroups.get('memory')!; // e.g. /…/hearth-NODEPID/r3, as the host names it
    expect(existsSync(`/sys/fs/cgroup/memory${dirname(own)}`)).toBe(true);
    expect(existsSync(`${seen}${dirname(own)}`)).toBe(false);
    expect(existsSync(`${seen}${own}`)).toBe(false);
    // Its own cgroup's files, at the hierarchy's mount point, and no folder of any other cgroup.
    expect(Number(await readFile(`${seen}/memory.limit_in_bytes`, 'utf8'))).toBe(512 * MIB);
    const dirs = (await readdir(seen, { withFileTypes: true })).filter((e) => e.isDirectory());
    expect(dirs.map((e) => e.name)).toEqual([]);
  });

  it('refuses a start past the memory budget with the numbers, and serves on', async () => {
    expect((await deploy('second', { ...SMALL, limits: { runnerMemoryMb: 512 } }, await small())).status).toBe(201);
    const third = await deploy('third', { ...SMALL, limits: { runnerMemoryMb: 512 } }, await small());
    expect(third.status).toBe(422);
    const why =
      /function third@1 cannot start here: its start's 512 MiB and the 1024 MiB the other runners use pass this node's 1024 MiB allocatable to runners/;
    expect(third.body.reason).toMatch(why);
    expect(await logs('third')).toMatch(why);
    const answer = await fetch(`${node.url}/v2/models/first/infer`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }] }),
    });
    expect(answer.status).toBe(200);
  }, 120_000);

  it('ends a parked runner (its function unloaded, kept for its next cold start) to make room', async () => {
    const pid = node.child.pid!;
    expect(await limitsOf(pid)).toEqual([512, 512]);
    const unload = await fetch(`${node.url}/v2/repository/models/second/unload`, { method: 'POST', headers: auth });
    expect(unload.status).toBe(200);
    // second's runner, parked, still holds its 512 MiB: unless it is ended, fourth does not fit.
    expect(await limitsOf(pid)).toEqual([512, 512]);
    const fourth = await deploy('fourth', { ...SMALL, limits: { runnerMemoryMb: 512 } }, await small());
    expect([fourth.status, fourth.body.reason]).toEqual([201, undefined]);
    expect(await limitsOf(pid)).toEqual([512, 512]);
  }, 120_000);

  it('leaves no runner folder nor cgroup behind once it ends on SIGTERM', async () => {
    const pid = node.child.pid!;
    expect((await runnersOf(pid)).length).toBeGreaterThan(0);
    node.child.kill('SIGTERM');
    expect(await node.exited).toBe(0);
    const folders = (await readdir(tmpdir())).filter((n) => n.startsWith(`hearth-runners-${pid}-`));
    expect(folders).toEqual([]);
    for (const hierarchy of await readdir('/sys/fs/cgroup'))
      expect([hierarchy, existsSync(`/sys/fs/cgroup/${hierarchy}/hearth-${pid}`)]).toEqual([hierarchy, false]);
  }, 60_000);
});
