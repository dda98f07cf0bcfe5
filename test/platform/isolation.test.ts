/**
 * Isolation (issue 11): each function version runs in its own runner process, and what runs there
 * — a hostile hook, a model that segfaults or hangs — reaches nothing of the node's and costs only
 * its own function. The node runs in its own process here, with its secrets in its environment
 * (as a real deployment has them), so what a runner could read of it is really there to read.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { modelPath } from '../helpers/fixtures.js';
import type { NodeProcess } from '../helpers/node.js';
import { hookBundle, postFunction, spawnNode, upload } from '../helpers/node.js';
import { runnerProcesses } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait.js';

const ADMIN = 'isolation-admin-key-01';
const INVOKE = 'isolation-invoke-key-02';
const SECRET = 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=';
const auth = (key = ADMIN) => ({ authorization: `Bearer ${key}` });
const X4 = {
  model: 'model.pt',
  maxBatchSize: 8,
  instances: { device: 'cpu' },
  inputs: [{ name: 'x', dtype: 'FP32', dims: [4] }],
};
const SMALL = { ...X4, outputs: [{ name: 'y', dtype: 'FP32', dims: [3] }] };
const DOUBLES = { ...X4, outputs: [{ name: 'y', dtype: 'FP32', dims: [4] }] };

const dir = await mkdtemp(join(tmpdir(), 'hearth-isolation-'));
const dataDir = join(dir, 'node');
let node: NodeProcess;
/** The node's own log, line by line. */
const nodeLines: string[] = [];

async function deploy(spec: object, model: string, hook?: string): Promise<void> {
  const r = await postFunction(node.url, { spec, artifacts: { model, ...(hook ? { hook } : {}) } }, { ...auth() });
  expect(r.status, await r.clone().text()).toBe(201);
  expect(((await r.json()) as { status: string }).status).toBe('ready');
}

const attack = async (body: object) => {
  const r = await fetch(`${node.url}/fn/attacks`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { ...auth(INVOKE), 'content-type': 'application/json' },
  });
  return {
    status: r.status,
    body: (await r.json()) as { ok?: boolean; value?: unknown; error?: string; code?: string },
  };
};
const infer = (name: string, x: number[][], key = INVOKE) =>
  fetch(`${node.url}/v2/models/${name}/infer`, {
    method: 'POST',
    body: JSON.stringify({ inputs: [{ name: 'x', shape: [x.length, 4], datatype: 'FP32', data: x.flat() }] }),
    headers: { ...auth(key), 'content-type': 'application/json' },
  });
const ready = async (name: string) =>
  (await fetch(`${node.url}/v2/models/${name}/ready`, { headers: auth(INVOKE) })).status;
const events = async (name: string) =>
  (
    (await (await fetch(`${node.url}/api/v1/functions/${name}`, { headers: auth() })).json()) as {
      pools: { events: { detail?: string }[] }[];
    }
  ).pools.flatMap((p) => p.events.map((e) => e.detail ?? ''));
/** The uids of the node's runner processes (the spare among them), from /proc. */
const runnerUids = async (): Promise<number[]> => (await runnerProcesses(node.child.pid!)).map((p) => p.uid);
const rss = (pid: number) => readFile(`/proc/${pid}/statm`, 'latin1').then((s) => Number(s.split(' ')[1]) * 4096);

const model = async (name: 'small' | 'crashes' | 'hangs' | 'balloon') =>
  upload(node.url, new Uint8Array(await readFile(modelPath(name))), auth());

beforeAll(async () => {
  node = await spawnNode(
    dataDir,
    {
      HEARTH_API_KEYS: `${ADMIN}:admin,${INVOKE}:invoke`,
      HEARTH_WEBHOOK_SECRET: SECRET,
    },
    (line) => nodeLines.push(line),
  );
  const hook = await upload(node.url, await hookBundle('attacks', join(dir, 'bundles')), auth());
  await deploy(
    {
      ...SMALL,
      name: 'attacks',
      hook: 'hook.ts',
      limits: { hookMemoryMb: 128, runnerMemoryMb: 1024, hookTimeoutMs: 3000, maxResponseMb: 8 },
    },
    await model('small'),
    hook,
  );
  await deploy({ ...DOUBLES, name: 'crashes' }, await model('crashes'));
  await deploy({ ...DOUBLES, name: 'hangs', limits: { forwardTimeoutMs: 1500 } }, await model('hangs'));
  await deploy({ ...SMALL, name: 'bystander' }, await model('small'));
  const scalars = [
    { name: 'mb', dtype: 'INT64', dims: [] },
    { name: 'rounds', dtype: 'INT64', dims: [] },
  ];
  await deploy(
    {
      ...DOUBLES,
      name: 'balloon',
      maxBatchSize: 0,
      inputs: [{ name: 'x', dtype: 'FP32', dims: [1, 4] }, ...scalars],
      outputs: [{ name: 'y', dtype: 'FP32', dims: [1, 4] }],
      limits: { runnerMemoryMb: 768 },
    },
    await model('balloon'),
  );
});
afterAll(async () => {
  node?.child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

describe('a hostile hook reaches nothing of the node', () => {
  it("sees none of the node's environment", async () => {
    const env = await attack({ attack: 'env' });
    expect(env.status).toBe(200);
    // Either the hook has no environment to read at all, or nothing of the node's is in it.
    const seen = env.body.ok ? (env.body.value as string[]) : [];
    expect(seen.filter((k) => /HEARTH|REDIS|AWS|S3/.test(k))).toEqual([]);
    const own = await attack({ attack: 'read', path: '/proc/self/environ' });
    expect(JSON.stringify(own.body)).not.toContain(ADMIN);
    expect(JSON.stringify(own.body)).not.toContain('HEARTH_WEBHOOK_SECRET');
    const nodes = await attack({ attack: 'read', path: `/proc/${node.child.pid}/environ` });
    expect(nodes.body.ok).toBe(false);
  });

  it('reads no file of the node or of another function, and starts no process', async () => {
    for (const path of [dataDir, join(dataDir, 'registry'), join(dataDir, 'artifacts'), '/etc', '/root']) {
      const r = await attack({ attack: 'list', path });
      expect([path, r.body.ok]).toEqual([path, false]);
    }
    for (const path of ['/etc/shadow', '/etc/passwd', join(dataDir, 'registry', 'crashes.json')]) {
      expect((await attack({ attack: 'read', path })).body.ok).toBe(false);
    }
    const exec = await attack({ attack: 'exec' });
    expect(exec.body.ok).toBe(false);
  });

  it('runs each function in a process of its own, as a uid no other runner has (when the node is root)', async () => {
    const uids = await runnerUids();
    // attacks, crashes, hangs, bystander, balloon and the spare.
    expect(uids.length).toBeGreaterThanOrEqual(5);
    if (process.getuid?.() === 0) {
      expect(uids).not.toContain(0);
      expect(new Set(uids).size).toBe(uids.length);
    }
  });

  it('cannot signal the node, nor its own runner', async () => {
    expect((await attack({ attack: 'kill-node' })).body.ok).toBe(false);
    expect((await attack({ attack: 'kill-self' })).body.ok).toBe(false);
    expect((await infer('bystander', [[1, 2, 3, 4]])).status).toBe(200);
    expect((await attack({ attack: 'env' })).status).toBe(200);
  });

  it('cannot reach Redis (or anything else) over TCP', async () => {
    const redis = await attack({ attack: 'redis', port: 6379 });
    expect(redis.body.ok).toBe(false);
  });

  it("gets an error for an ArrayBuffer bomb, and the node's memory stays where it was", async () => {
    const before = await rss(node.child.pid!);
    const bomb = await attack({ attack: 'bomb', mb: 4096 });
    expect(bomb.status === 200 ? bomb.body.ok : false).toBe(false);
    expect(await rss(node.child.pid!)).toBeLessThan(before + 200 * 2 ** 20);
    await waitFor(
      'the attacks function to serve again',
      async () => (await attack({ attack: 'env' })).status,
      (s) => s === 200,
      { timeoutMs: 30_000, intervalMs: 200 },
    );
  });
});

describe('a hostile hook cannot end, hang or flood the node', () => {
  const served = async () => expect((await attack({ attack: 'env' })).status).toBe(200);

  it.each([
    'content-type-newline',
    'content-type-nul',
    'content-type-none',
  ])('answers a response whose content type a header cannot carry (%s) with 500, and serves on', async (kind) => {
    const r = await attack({ attack: kind });
    expect(r.status).toBe(500);
    expect(r.body.code).toBe('HOOK_FAILED');
    expect(r.body.error).toMatch(/content type that is not a media type/);
    await served();
  });

  it('ends a call whose hook returns a promise that never settles at limits.hookTimeoutMs, sync and async', async () => {
    const sync = await attack({ attack: 'never' });
    expect(sync.status).toBe(500);
    expect(sync.body.error).toMatch(/ran past its 3000 ms limit/);
    const submitted = await fetch(`${node.url}/fn/attacks`, {
      method: 'POST',
      body: JSON.stringify({ attack: 'never' }),
      headers: { ...auth(INVOKE), 'content-type': 'application/json', prefer: 'respond-async' },
    });
    expect(submitted.status).toBe(202);
    const { id } = (await submitted.json()) as { id: string };
    const job = await waitFor(
      'the job to end',
      async () =>
        (await (await fetch(`${node.url}/api/v1/jobs/${id}`, { headers: auth(INVOKE) })).json()) as {
          status: string;
          error?: { error: string };
        },
      (j) => j.status === 'failed' || j.status === 'succeeded',
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    expect(job.status).toBe('failed');
    expect(job.error?.error).toMatch(/ran past its 3000 ms limit/);
    await served();
  });

  it("cannot reach the sandbox's host callbacks but through its own globals", async () => {
    const r = await attack({ attack: 'host-refs' });
    expect(r.body.ok).toBe(true);
    expect(new Set(r.body.value as string[])).toEqual(new Set(['unreachable']));
  });

  it('has no WebAssembly (its memory would escape limits.hookMemoryMb)', async () => {
    const r = await attack({ attack: 'wasm' });
    expect(r.body.ok).toBe(false);
    expect(r.body.error).toBe('no WebAssembly here');
  });

  it('refuses a response past limits.maxResponseMb, binary or JSON, and lets one under it through', async () => {
    const before = await rss(node.child.pid!);
    for (const kind of ['huge-binary', 'huge-json']) {
      const r = await attack({ attack: kind, mb: 16 });
      expect([kind, r.status]).toEqual([kind, 500]);
      expect(r.body.error).toMatch(/over its limit of 8388608 \(limits\.maxResponseMb\)/);
    }
    const small = await fetch(`${node.url}/fn/attacks`, {
      method: 'POST',
      body: JSON.stringify({ attack: 'huge-binary', mb: 4 }),
      headers: { ...auth(INVOKE), 'content-type': 'application/json' },
    });
    expect(small.status).toBe(200);
    expect((await small.arrayBuffer()).byteLength).toBe(4 << 20);
    expect(await rss(node.child.pid!)).toBeLessThan(before + 100 * 2 ** 20);
  });

  it("keeps a flood of log lines out of the node's log and the function's, saying how many it dropped", async () => {
    const lines = () => nodeLines.filter((l) => l.includes('"function":"attacks@1"') && l.includes('yyyy')).length;
    const before = lines();
    const t0 = performance.now();
    expect((await attack({ attack: 'log-flood', lines: 2000 })).status).toBe(200);
    const counted = () => {
      const notes = nodeLines.filter(
        (l) => l.includes('"function":"attacks@1"') && /line\(s\) of output dropped/.test(l),
      );
      return notes.reduce((n, l) => n + Number(/(\d+) line\(s\) of output dropped/.exec(l)![1]), 0);
    };
    // Every line is either logged or counted in a "dropped" line, once the runner's budget refills.
    await waitFor(
      'every line to be logged or counted as dropped',
      () => lines() - before + counted(),
      (total) => total >= 2000,
      { intervalMs: 100 },
    );
    // Of 2,000 lines of 8 KiB, a burst's worth passed (1.25 MiB: 160 lines) and what the budget
    // refilled while the node read them (256 KiB, 32 lines, a second: a loaded machine reads for
    // longer, and lets more through); the rest were counted.
    const seconds = (performance.now() - t0) / 1000;
    const budget = Math.ceil(160 + 32 * seconds) + 2;
    const passed = lines() - before;
    expect(passed).toBeGreaterThan(0);
    expect(passed).toBeLessThanOrEqual(budget);
    expect(passed).toBeLessThan(2000);
    expect(counted()).toBeGreaterThanOrEqual(2000 - passed);
    const logs = (await (
      await fetch(`${node.url}/api/v1/functions/attacks/logs?limit=1000`, { headers: auth() })
    ).json()) as {
      entries: { msg: string }[];
    };
    expect(logs.entries.filter((e) => e.msg.includes('yyyy')).length).toBeLessThanOrEqual(budget);
    await served();
  });
});

describe('a model that crashes or hangs costs only its own function', () => {
  it('segfaults its runner only: its request gets 503, a concurrent load on another function sees no error, and it restarts', async () => {
    let stop = false;
    const statuses: number[] = [];
    // Its own connection per request: a kept-alive socket the server closes as the client reuses
    // it (undici's known race) would be an error of the test's client, not of the node.
    const once = () =>
      new Promise<number>((resolve, reject) => {
        const body = JSON.stringify({ inputs: [{ name: 'x', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }] });
        const req = request(
          `${node.url}/v2/models/bystander/infer`,
          { method: 'POST', agent: false, headers: { ...auth(INVOKE), 'content-type': 'application/json' } },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode!));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const load = Promise.all(
      Array.from({ length: 4 }, async () => {
        while (!stop) statuses.push(await once());
      }),
    );
    expect((await infer('crashes', [[1, 2, 3, 4]])).status).toBe(200);
    const crash = await fetch(`${node.url}/v2/models/crashes/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'x', shape: [1, 4], datatype: 'FP32', data: [1000, 0, 0, 0] }] }),
      headers: { ...auth(INVOKE), 'content-type': 'application/json', 'x-request-id': 'req-segfault' },
    });
    expect(crash.status).toBe(503);
    expect(crash.headers.get('retry-after')).toBe('1');
    // The runner's crash is in the function's log as an error, with the call's request id and version.
    const logged = (
      (await (await fetch(`${node.url}/api/v1/functions/crashes/logs?level=error`, { headers: auth() })).json()) as {
        entries: { version?: number; msg: string; requestId?: string }[];
      }
    ).entries.find((e) => e.requestId === 'req-segfault');
    expect(logged).toMatchObject({ version: 1, msg: expect.stringMatching(/^UNAVAILABLE: .*SIGSEGV/) });
    await waitFor(
      'crashes to be ready again',
      () => ready('crashes'),
      (s) => s === 200,
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    // A second crash soon after waits (backs off) before its restart: not ready meanwhile.
    expect((await infer('crashes', [[1000, 0, 0, 0]])).status).toBe(503);
    expect(await ready('crashes')).toBe(503);
    expect((await infer('crashes', [[1, 2, 3, 4]])).status).toBe(503);
    expect((await events('crashes')).filter((d) => d.includes('signal SIGSEGV')).length).toBeGreaterThanOrEqual(2);
    await waitFor(
      'crashes to be ready again',
      () => ready('crashes'),
      (s) => s === 200,
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    const ok = await infer('crashes', [[1, 2, 3, 4]]);
    expect(((await ok.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual([2, 4, 6, 8]);
    stop = true;
    await load;
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
  });

  it("kills a runner past limits.runnerMemoryMb: the request fails, the node's memory is untouched, the function serves again", async () => {
    const balloon = (mb: number, rounds: number) =>
      fetch(`${node.url}/v2/models/balloon/infer`, {
        method: 'POST',
        headers: { ...auth(INVOKE), 'content-type': 'application/json' },
        body: JSON.stringify({
          inputs: [
            { name: 'x', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] },
            { name: 'mb', shape: [], datatype: 'INT64', data: [mb] },
            { name: 'rounds', shape: [], datatype: 'INT64', data: [rounds] },
          ],
        }),
      });
    expect((await balloon(16, 1)).status).toBe(200);
    const before = await rss(node.child.pid!);
    const big = await balloon(1536, 400);
    expect(big.status).toBe(503);
    expect(((await big.json()) as { error: string }).error).toMatch(
      /past its 768 MiB limit \(limits\.runnerMemoryMb\)/,
    );
    expect(await rss(node.child.pid!)).toBeLessThan(before + 100 * 2 ** 20);
    await waitFor(
      'balloon to serve again',
      async () => (await balloon(16, 1)).status,
      (s) => s === 200,
      { timeoutMs: 30_000, intervalMs: 200 },
    );
  });

  it('stops a forward past limits.forwardTimeoutMs: the request fails, the runner restarts, the function serves again', async () => {
    const t0 = Date.now();
    const hung = await infer('hangs', [[60, 0, 0, 0]]);
    expect(hung.status).toBe(503);
    expect(((await hung.json()) as { error: string }).error).toMatch(/1500 ms limit \(limits\.forwardTimeoutMs\)/);
    expect(Date.now() - t0).toBeLessThan(20_000);
    await waitFor(
      'hangs to serve again',
      async () => (await infer('hangs', [[1, 1, 1, 1]])).status,
      (s) => s === 200,
      { timeoutMs: 30_000, intervalMs: 200 },
    );
  });
});
