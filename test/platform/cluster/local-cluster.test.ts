/**
 * `npm run cluster` (tools/cluster.ts) as a developer runs it — tsx, as the npm script does — on
 * free ports and a data folder of the test's: a model function deployed through node 1 with the
 * `hearth` CLI answers through node 2 with python3-torch's output, from node 1's pool; no node says
 * its registry is not answering; and after SIGINT every process it started (nodes, runners, its
 * redis-server) is gone, its ports are free and its Redis keys are dropped.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';

import { Hearth } from '../../../sdk/client.js';
import { portFree } from '../../../tools/cluster/children.js';
import { cliIn } from '../../helpers/cli.js';
import { modelPath, REPO_ROOT } from '../../helpers/fixtures.js';
import { processes } from '../../helpers/processes.js';
import { maxAbsDiff } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';
import { SMALL_SPEC, SMALL_X } from '../../helpers/specs.js';
import { waitFor } from '../../helpers/wait.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-local-cluster-'));
const { parsed } = cliIn(dir);
afterAll(() => rm(dir, { recursive: true, force: true }));

interface Running {
  child: ChildProcess;
  lines: string[];
  /** The first line (seen or to come) that matches. */
  line(pattern: RegExp): Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
}

/** `npm run cluster -- ARGS` without npm (whose SIGTERM does not reach its script): the script's own command. */
function startCluster(args: string[]): Running {
  const scripts = (
    JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: { cluster: string } }
  ).scripts;
  const [command, ...argv] = scripts.cluster.split(' ');
  expect(command).toBe('node');
  const child = spawn(process.execPath, [...argv, ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  for (const stream of [child.stdout!, child.stderr!])
    createInterface({ input: stream }).on('line', (l) => lines.push(l));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const line = async (pattern: RegExp) => {
    const found = () => lines.map((l) => pattern.exec(l)).find((m) => m !== null);
    await waitFor(
      `a line matching ${pattern}`,
      () => found() ?? (child.exitCode !== null ? 'exited' : undefined),
      Boolean,
      {
        timeoutMs: 180_000,
        intervalMs: 100,
      },
    );
    const match = found();
    if (!match) throw new Error(`the cluster ended before printing ${pattern}:\n${lines.join('\n')}`);
    return match;
  };
  return { child, lines, line, exited };
}

interface Listed {
  name: string;
  url: string;
  pid: number;
  id: string;
  ports: number[];
}

/** The nodes the banner lists. */
async function bannerNodes(cluster: Running, count: number): Promise<Listed[]> {
  await cluster.line(new RegExp(`^Hearth cluster of ${count} nodes? is up`));
  return cluster.lines.flatMap((l) => {
    const m =
      /^ {2}(node-\d+) {2}(http:\/\/127\.0\.0\.1:(\d+)) {2}gRPC 127\.0\.0\.1:(\d+) {2}metrics 127\.0\.0\.1:(\d+) {2}\(pid (\d+), id (\S+)\)$/.exec(
        l,
      );
    return m
      ? [{ name: m[1]!, url: m[2]!, ports: [m[3]!, m[4]!, m[5]!].map(Number), pid: Number(m[6]), id: m[7]! }]
      : [];
  });
}

/** A live process's state from /proc/PID/stat: its process group and start time (with its pid, it names one process). */
function procStat(pid: number): { pgrp: number; start: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? undefined : { pgrp: Number(fields[2]), start: fields[19]! };
  } catch {
    return undefined;
  }
}

const startTime = (pid: number): string | undefined => procStat(pid)?.start;

type Tree = { pid: number; ppid: number; start: string; args: string[] }[];

/** Every descendant of `root` now, each with its start time. */
async function descendants(root: number): Promise<Tree> {
  const all = await processes();
  const byPid = new Map(all.map((p) => [p.pid, p]));
  const under = (pid: number): boolean => {
    for (let q = byPid.get(byPid.get(pid)?.ppid ?? 0); q; q = byPid.get(q.ppid)) if (q.pid === root) return true;
    return false;
  };
  return all.flatMap((p) => {
    const start = under(p.pid) ? startTime(p.pid) : undefined;
    return start ? [{ pid: p.pid, ppid: p.ppid, start, args: p.args }] : [];
  });
}

/**
 * What still runs of `tree`, and of the process groups of the cluster's children (each child starts
 * one: a process started after `tree` was seen, a runner, is in its node's), once nothing does (or
 * the wait's failsafe has passed).
 */
function untilGone(cluster: number, tree: { pid: number; ppid: number; start: string }[]): Promise<number[]> {
  const groups = new Set(tree.filter((p) => p.ppid === cluster).map((p) => p.pid));
  const left = async () => {
    const running = tree.filter((p) => startTime(p.pid) === p.start).map((p) => p.pid);
    const grouped = (await processes()).filter((p) => groups.has(procStat(p.pid)?.pgrp ?? -1)).map((p) => p.pid);
    return [...new Set([...running, ...grouped])];
  };
  return waitFor('every process the cluster started to end', left, (l) => l.length === 0);
}

/** Stops the cluster with SIGINT; its exit code, once nothing it started runs. */
async function interrupt(cluster: Running, tree: Tree): Promise<number | null> {
  cluster.child.kill('SIGINT');
  const code = await cluster.exited;
  expect(await untilGone(cluster.child.pid!, tree)).toEqual([]);
  return code;
}

async function keysUnder(prefix: string): Promise<string[]> {
  const redis = new Redis('redis://127.0.0.1:6379');
  try {
    return await redis.keys(`${prefix}*`);
  } finally {
    redis.disconnect();
  }
}

/** A function folder as `hearth init` leaves one: the `small` fixture as model.pt and its spec. */
async function functionFolder(name: string): Promise<string> {
  const fn = join(dir, name);
  await mkdir(fn);
  await copyFile(modelPath('small'), join(fn, 'model.pt'));
  await writeFile(join(fn, 'hearth.yaml'), stringify({ ...SMALL_SPEC, name }));
  return fn;
}

describe('npm run cluster', () => {
  it('deploys through node 1, answers through node 2 from node 1’s pool, and leaves nothing running after SIGINT', async () => {
    const cluster = startCluster(['--nodes', '2', '--port', '0', '--data', join(dir, 'data')]);
    try {
      const [one, two] = (await bannerNodes(cluster, 2)) as [Listed, Listed];
      const prefix = (await cluster.line(/^ {2}Redis {3}redis:\/\/127\.0\.0\.1:6379, keys under (\S+)$/))[1]!;
      const s3Port = Number((await cluster.line(/^ {2}S3 {6}http:\/\/127\.0\.0\.1:(\d+),/))[1]);
      expect(cluster.lines).toContain(`Console: ${one.url}/console/ (any node's shows every node's pools)`);

      const fn = await functionFolder('clustered');
      const deployed = await parsed<{ version: number; status: string; url: string }>(one.url, 'deploy', fn, '--wait');
      expect(deployed).toMatchObject({ version: 1, status: 'ready', url: `${one.url}/fn/clustered` });
      // Node 2 sees node 1's pool within a heartbeat; its call goes there rather than loading its own.
      const pools = () => new Hearth({ url: two.url }).pools();
      await waitFor("node 2 to see node 1's pool", pools, (ps) =>
        ps.some((p) => p.function === 'clustered' && p.node === one.id && p.state === 'warm'),
      );
      const x = { dtype: 'FP32' as const, shape: [2, 4], data: Float32Array.from(SMALL_X.flat()) };
      const answer = await new Hearth({ url: two.url }).infer('clustered', { x });
      const reference = pythonForward(modelPath('small'), [x]).outputs[0]!;
      expect(answer.y!.shape).toEqual(reference.shape);
      expect(maxAbsDiff(answer.y!.data as Float32Array, reference.data as Float32Array)).toBeLessThan(1e-5);
      expect((await pools()).filter((p) => p.function === 'clustered').map((p) => p.node)).toEqual([one.id]);
      expect(await keysUnder(prefix)).not.toEqual([]);

      const tree = await descendants(cluster.child.pid!);
      expect(tree.map((p) => p.pid)).toEqual(expect.arrayContaining([one.pid, two.pid]));
      // The runners (jailed, forked by each node's template) are among them: the tree is whole.
      expect(tree.filter((p) => p.args.includes('--experimental-permission')).length).toBeGreaterThan(0);
      expect(await interrupt(cluster, tree)).toBe(0);
      for (const port of [...one.ports, ...two.ports, s3Port]) expect(await portFree(port), `port ${port}`).toBe(true);
      expect(await keysUnder(prefix)).toEqual([]);
      expect(cluster.lines.filter((l) => /not answering|isn't writeable/i.test(l))).toEqual([]);
      expect(cluster.lines.filter((l) => /^node-\d +\| /.test(l)).length).toBeGreaterThan(0);
    } finally {
      cluster.child.kill('SIGKILL');
    }
  });

  it('starts a redis-server of its own with --redis own, keys on; reports a node that dies and, the last gone, stops', async () => {
    const cluster = startCluster([
      '--nodes',
      '1',
      '--port',
      '0',
      '--data',
      join(dir, 'own'),
      '--redis',
      'own',
      '--keys',
    ]);
    try {
      const [one] = (await bannerNodes(cluster, 1)) as [Listed];
      const redisPort = Number(
        (
          await cluster.line(
            /^ {2}Redis {3}its own redis-server at redis:\/\/127\.0\.0\.1:(\d+) \(a password of this run's own\),/,
          )
        )[1],
      );
      // Loopback is every local user's: its own Redis asks a password, said nowhere (not even argv),
      // and its objects' folder is this user's alone.
      const stranger = new Redis(`redis://127.0.0.1:${redisPort}`, { lazyConnect: true, maxRetriesPerRequest: 0 });
      stranger.on('error', () => undefined);
      await stranger.connect().catch(() => undefined);
      await expect(stranger.ping()).rejects.toThrow(/NOAUTH/);
      stranger.disconnect();
      expect(cluster.lines.filter((l) => /redis:\/\/[^@\s]*:[^@\s]*@/.test(l))).toEqual([]);
      expect((await stat(join(dir, 'own', 's3'))).mode & 0o777).toBe(0o700);
      const key = (await cluster.line(/^API key \(admin\): (\S+) /))[1]!;
      expect((await fetch(`${one.url}/api/v1/functions`)).status).toBe(401);
      const listed = await fetch(`${one.url}/api/v1/functions`, { headers: { authorization: `Bearer ${key}` } });
      expect(listed.status).toBe(200);

      const tree = await descendants(cluster.child.pid!);
      const server = tree.find((p) => p.args.join(' ').includes('redis-server'));
      expect(server).toBeDefined();
      expect(server!.args.join(' ')).not.toMatch(/requirepass/);
      process.kill(one.pid, 'SIGKILL');
      expect(await cluster.exited).toBe(1);
      expect(cluster.lines).toContain('cluster | node-1 ended (signal SIGKILL)');
      expect(cluster.lines).toContain('cluster | no node is left: stopping the cluster');
      expect(await untilGone(cluster.child.pid!, tree)).toEqual([]);
      for (const port of [...one.ports, redisPort]) expect(await portFree(port), `port ${port}`).toBe(true);
      expect(cluster.lines.filter((l) => /not answering|isn't writeable/i.test(l))).toEqual([]);
    } finally {
      cluster.child.kill('SIGKILL');
    }
  });

  it('stops what it has started when SIGINT comes while its nodes are still starting', async () => {
    const cluster = startCluster(['--nodes', '2', '--port', '0', '--data', join(dir, 'early'), '--redis', 'own']);
    try {
      // Both nodes spawned (and its redis-server), neither listening yet: a node takes seconds to listen.
      const tree = await waitFor(
        'the nodes to be spawned',
        () => descendants(cluster.child.pid!),
        (t) => t.filter((p) => p.args.some((a) => a.endsWith('dist/node/main.mjs'))).length === 2,
        { intervalMs: 20, timeoutMs: 180_000 },
      );
      expect(tree.find((p) => p.args.join(' ').includes('redis-server'))).toBeDefined();
      expect(await interrupt(cluster, tree)).toBe(0);
      expect(cluster.lines).toContain('cluster | stopped: nothing it started is running');
    } finally {
      cluster.child.kill('SIGKILL');
    }
  });

  it('refuses a port already taken, naming it and --port', async () => {
    const held = createServer();
    await new Promise<void>((r) => held.listen(0, '127.0.0.1', r));
    const port = (held.address() as AddressInfo).port;
    try {
      const cluster = startCluster([
        '--nodes',
        '1',
        '--port',
        String(port),
        '--data',
        join(dir, 'taken'),
        '--no-build',
      ]);
      expect(await cluster.exited).toBe(1);
      expect(cluster.lines.join('\n')).toContain(
        `port ${port} (node-1's http) is taken: stop what holds it, or pick others with --port (0: free ones)`,
      );
    } finally {
      held.close();
    }
  });
});
