/**
 * Cluster mode with real processes: three nodes sharing Redis and S3 serve one function's async
 * jobs; one is killed with SIGKILL while it holds running jobs, and every accepted job still
 * completes, with python3-torch's output, and its webhook arrives: once, or again only where the
 * killed node had sent it and died before marking it sent (webhooks are at least once, and the
 * repeat is the same message with the same `webhook-id`).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { modelPath } from '../../helpers/fixtures.js';
import type { NodeProcess } from '../../helpers/node.js';
import { deployFixture, dropKeys, spawnNode, uniquePrefix } from '../../helpers/node.js';
import { maxAbsDiff } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';
import type { TestS3 } from '../../helpers/s3.js';
import { startS3 } from '../../helpers/s3.js';
import { connectionOwner } from '../../helpers/sockets.js';
import { SLOW_SPEC, SMALL_SPEC } from '../../helpers/specs.js';
import { waitFor } from '../../helpers/wait.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-cluster-'));
const prefix = uniquePrefix();
const ITERS = 1000;
/** A job's rounds: long enough (~0.3 s each here, 16 a node) that b still holds jobs when the kill
 * lands, however slowly a loaded machine polls their statuses before it. */
const JOB_ITERS = 4000;
const JOBS = 48;
const x = Float32Array.from({ length: 4 * 512 }, (_, i) => Math.cos(i) / 4);
const SPEC = SLOW_SPEC;

describe('three nodes on one Redis and one S3', () => {
  let s3: TestS3;
  const nodes: NodeProcess[] = [];
  /** Each webhook-id's deliveries: which node process sent it, and the body. */
  const deliveries = new Map<string, { pid: number | undefined; body: string }[]>();
  let hookUrl: string;
  const hookServer = createServer((req, res) => {
    // Named while the sender holds the connection: its pid among the nodes'.
    const pid = connectionOwner(
      req.socket.remotePort!,
      (hookServer.address() as AddressInfo).port,
      nodes.map((n) => n.child.pid!),
    );
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      deliveries.set(id, [...(deliveries.get(id) ?? []), { pid, body: Buffer.concat(chunks).toString() }]);
      res.writeHead(204).end();
    });
  });

  let env: Record<string, string>;

  beforeAll(async () => {
    s3 = await startS3();
    await new Promise<void>((r) => hookServer.listen(0, '127.0.0.1', r));
    hookUrl = `http://127.0.0.1:${(hookServer.address() as AddressInfo).port}/`;
    env = {
      REDIS_URL: 'redis://127.0.0.1:6379',
      HEARTH_REDIS_PREFIX: prefix,
      HEARTH_S3_BUCKET: s3.bucket,
      HEARTH_S3_ENDPOINT: s3.endpoint,
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      HEARTH_JOB_LOCK_MS: '2000',
      HEARTH_JOB_BACKOFF_MS: '100',
      HEARTH_JOB_CONCURRENCY: '8',
      HEARTH_WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('base64')}`,
      HEARTH_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
    };
    nodes.push(...(await Promise.all([0, 1, 2].map((i) => spawnNode(join(dir, `node-${i}`), env)))));
  });
  afterAll(async () => {
    for (const n of nodes) n.child.kill('SIGKILL');
    await Promise.all(nodes.map((n) => n.exited));
    await new Promise((r) => hookServer.close(r));
    await s3?.close();
    await dropKeys(prefix);
    await rm(dir, { recursive: true, force: true });
  });

  /** The request body for `iters` rounds, and python3-torch's answer to it. */
  const slowCall = (iters: number): { body: string; reference: Float32Array } => ({
    reference: pythonForward(modelPath('slow'), [
      { dtype: 'FP32', shape: [4, 512], data: x },
      { dtype: 'INT64', shape: [], data: BigInt64Array.from([BigInt(iters)]) },
    ]).outputs[0]!.data as Float32Array,
    body: JSON.stringify({
      inputs: { x: Array.from({ length: 4 }, (_, r) => Array.from(x.subarray(r * 512, (r + 1) * 512))), n: iters },
    }),
  });
  const { body, reference } = slowCall(ITERS);
  const jobCall = slowCall(JOB_ITERS);
  const call = async (node: NodeProcess, fn: string): Promise<void> => {
    const r = await fetch(`${node.url}/fn/${fn}`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
    });
    expect(r.status).toBe(200);
    expect(
      maxAbsDiff(Float32Array.from(((await r.json()) as { outputs: { y: number[][] } }).outputs.y.flat()), reference),
    ).toBeLessThan(1e-4);
  };
  type Brief = { node: string; function: string; state: string };
  const pools = async (node: NodeProcess, fn: string): Promise<Brief[]> =>
    ((await (await fetch(`${node.url}/api/v1/pools`)).json()) as { pools: Brief[] }).pools.filter(
      (p) => p.function === fn && p.state !== 'stopped',
    );
  const until = async (what: string, check: () => Promise<boolean>): Promise<void> => {
    await waitFor(what, check, (ok) => ok);
  };
  const deploy = async (node: NodeProcess, name: string): Promise<void> => {
    const r = await deployFixture(node.url, { ...SPEC, name }, { model: 'slow' });
    expect(r.status).toBe(201);
  };

  it('sends a call on a node without the version to the node that holds it warm', async () => {
    const [a, , c] = nodes as [NodeProcess, NodeProcess, NodeProcess];
    await deploy(a, 'slow');
    // Every node sees a's pool within a heartbeat.
    await until("c to see a's pool", async () =>
      (await pools(c, 'slow')).some((p) => p.node === a.node && p.state === 'warm'),
    );
    await Promise.all(Array.from({ length: 4 }, () => call(c, 'slow')));
    expect((await pools(c, 'slow')).map((p) => p.node)).toEqual([a.node]);
    // The nodes as c sees them: all three, c itself marked, each heard from within three beats.
    const seen = (
      (await (await fetch(`${c.url}/api/v1/nodes`)).json()) as {
        nodes: { id: string; self: boolean; heartbeatAgeMs: number; pools: number }[];
      }
    ).nodes;
    expect(seen.map((n) => n.id).sort()).toEqual(nodes.map((n) => n.node).sort());
    expect(seen.filter((n) => n.self).map((n) => n.id)).toEqual([c.node]);
    for (const n of seen) expect(n.heartbeatAgeMs).toBeLessThan(6000);
    expect(seen.find((n) => n.id === a.node)!.pools).toBeGreaterThan(0);
  });

  it('keeps a GPU version deployed through nodes without a GPU pending, saying it waits for one, and serves the CPU version meanwhile', async () => {
    const [a, b] = nodes as [NodeProcess, NodeProcess, NodeProcess];
    await deploy(a, 'gpu-wait');
    const r = await deployFixture(
      a.url,
      { ...SPEC, name: 'gpu-wait', instances: { device: 'cuda' } },
      { model: 'slow' },
    );
    expect(r.status).toBe(202);
    expect(await r.json()).toMatchObject({
      version: 2,
      status: 'pending',
      reason: expect.stringMatching(/^waiting for a node with a GPU \(instances.device cuda/),
    });
    // Describe on any node says so; no CPU node adopts it (they sweep every 5 s).
    await new Promise((res) => setTimeout(res, 5500));
    const described = (await (await fetch(`${b.url}/api/v1/functions/gpu-wait`)).json()) as {
      versions: { version: number; status: string; reason?: string }[];
      traffic: Record<string, number>;
    };
    expect(described.versions[1]).toMatchObject({
      version: 2,
      status: 'pending',
      reason: expect.stringMatching(/waiting for a node with a GPU/),
    });
    expect(described.traffic).toEqual({ 1: 100 });
    await call(b, 'gpu-wait');
    const pinned = await fetch(`${b.url}/fn/gpu-wait/versions/2`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
    });
    expect(pinned.status).toBe(503);
    expect(((await pinned.json()) as { error: string }).error).toMatch(/gpu-wait v2 is waiting for a node with a GPU/);
  });

  it('cold-starts a burst at zero instances on one node only (the lease holder)', async () => {
    const [a, b, c] = nodes as [NodeProcess, NodeProcess, NodeProcess];
    await deploy(a, 'burst');
    expect((await fetch(`${a.url}/v2/repository/models/burst/unload`, { method: 'POST' })).status).toBe(200);
    await until(
      'the pool to be gone everywhere',
      async () => (await pools(b, 'burst')).length === 0 && (await pools(c, 'burst')).length === 0,
    );
    await Promise.all([b, c, b, c, b, c].map((n) => call(n, 'burst')));
    await until('a to see the new pool', async () => (await pools(a, 'burst')).length > 0);
    await new Promise((r) => setTimeout(r, 2500)); // another heartbeat: a second pool would show by now
    const held = await pools(a, 'burst');
    expect(held.length).toBe(1);
    expect([b.node, c.node]).toContain(held[0]!.node);
  });

  it('completes every async job exactly once after one node is killed mid-load, and sends each webhook again only where that node died sending it', async () => {
    const [a, b, c] = nodes as [NodeProcess, NodeProcess, NodeProcess];

    // Jobs go in through all three nodes; every node takes jobs off the function's queue.
    const ids = await Promise.all(
      Array.from({ length: JOBS }, async (_, i) => {
        const node = nodes[i % 3]!;
        const r = await fetch(`${node.url}/fn/slow`, {
          method: 'POST',
          body: jobCall.body,
          headers: { 'content-type': 'application/json', prefer: 'respond-async', 'hearth-webhook-url': hookUrl },
        });
        expect(r.status).toBe(202);
        return ((await r.json()) as { id: string }).id;
      }),
    );

    // Kill b while it runs jobs (its pool has taken some).
    const onB = async (): Promise<string[]> => {
      const jobs = await Promise.all(
        ids.map(
          async (id) =>
            (await (await fetch(`${a.url}/api/v1/jobs/${id}`)).json()) as { id: string; status: string; node?: string },
        ),
      );
      return jobs.filter((j) => j.status === 'running' && j.node === b.node).map((j) => j.id);
    };
    const taken = await waitFor('b to run some jobs', onB, (t) => t.length > 0, { intervalMs: 25 });
    expect(taken.length).toBeGreaterThan(0);
    b.child.kill('SIGKILL');
    expect(await b.exited).toBeNull();

    // Every job finishes on a or c, with the right output.
    const deadline = Date.now() + 90_000;
    const final = new Map<
      string,
      { status: string; attempts: number; node?: string; result?: { json?: { outputs: { y: number[][] } } } }
    >();
    while (final.size < ids.length && Date.now() < deadline) {
      for (const id of ids) {
        if (final.has(id)) continue;
        const job = (await (await fetch(`${c.url}/api/v1/jobs/${id}`)).json()) as { status: string; attempts: number };
        if (job.status === 'succeeded' || job.status === 'failed') final.set(id, job);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(final.size).toBe(ids.length);
    for (const job of final.values()) {
      expect(job.status, JSON.stringify((job as { error?: unknown }).error)).toBe('succeeded');
      expect(maxAbsDiff(Float32Array.from(job.result!.json!.outputs.y.flat()), jobCall.reference)).toBeLessThan(1e-4);
    }
    // The jobs b was running when it died (it takes the next as it ends one: on a busy machine not
    // those seen running a moment before, which it may have finished) were taken over by a or c,
    // and still have one result and one webhook. (One b finished as it was killed keeps b's result.)
    const retaken = [...final.values()].filter((j) => j.attempts > 1);
    expect(retaken.length).toBeGreaterThan(0);
    for (const job of retaken) expect(job.node).not.toBe(b.node);
    await waitFor(
      'every webhook',
      () => deliveries.size,
      (n) => n >= ids.length,
    ).catch(() => undefined);
    expect(new Set(deliveries.keys())).toEqual(new Set(ids.map((id) => `job_${id}`)));
    // A job reran on another node queues no second webhook (one delivery job per job id). A
    // webhook comes twice only where b sent it and died before marking it sent: the repeat is
    // the same message, for the receiver to drop by its webhook-id.
    // a and c live throughout, so a connection that no live node holds is b's: b sent that
    // webhook and was killed before the receiver looked (b's descriptors go with it), so it never
    // saw the answer nor marked the webhook sent.
    for (const [id, sent] of deliveries) {
      const first = sent[0]!.pid ?? b.child.pid;
      expect([a.child.pid, b.child.pid, c.child.pid], `${id}'s first delivery came from a node`).toContain(first);
      if (sent[0]!.pid === undefined) expect(sent.length, `${id}: b died sending it`).toBe(2);
      if (sent.length === 1) continue;
      expect(first, `${id} delivered ${sent.length} times`).toBe(b.child.pid);
      expect(sent.length).toBe(2);
      expect(sent[1]!.body).toBe(sent[0]!.body);
    }
    // A dead node leaves the nodes' listing once it misses three beats.
    await waitFor(
      'b to leave the listing',
      async () => ((await (await fetch(`${a.url}/api/v1/nodes`)).json()) as { nodes: { id: string }[] }).nodes,
      (seen) => !seen.some((n) => n.id === b.node) && seen.length === 2,
    );
  });

  it('runs a forwarded call itself when the node holding the version dies before taking it', async () => {
    const [a, , c] = nodes as [NodeProcess, NodeProcess, NodeProcess];
    await deploy(a, 'reroute');
    await until('c to see a hold the version', async () =>
      (await pools(c, 'reroute')).some((p) => p.node === a.node && p.state === 'warm'),
    );
    a.child.kill('SIGKILL');
    expect(await a.exited).toBeNull();
    // c still believes a holds it: the call waits in the version's queue with nobody to take it,
    // until a drops out of c's view (three missed heartbeats) and c runs it itself.
    await call(c, 'reroute');
    expect((await pools(c, 'reroute')).map((p) => p.node)).toContain(c.node);
  });

  it('takes over the canary of a node that died watching it, and rolls it back by itself', async () => {
    const c = nodes[2]!;
    const d = await spawnNode(join(dir, 'node-3'), env);
    nodes.push(d);
    const spec = { ...SMALL_SPEC, name: 'canaried', hook: 'hook.ts' };
    expect((await deployFixture(d.url, spec, { model: 'small', hook: 'echo' })).status).toBe(201);
    // v2's post throws on every call (no spec example, so no smoke request stops it first).
    const v2 = await deployFixture(
      d.url,
      spec,
      { model: 'small', hook: 'throws' },
      {},
      {
        canary: { percent: 50, windowMs: 600_000 },
      },
    );
    expect(v2.status).toBe(201);
    expect(((await v2.json()) as { canary: { state: string; split: object } }).canary).toMatchObject({
      state: 'watching',
      split: { 1: 50, 2: 50 },
    });
    d.child.kill('SIGKILL');
    expect(await d.exited).toBeNull();
    // Calls keep coming to c; once d's lease lapses, c takes the watch and counts them.
    const info = async () =>
      (await (await fetch(`${c.url}/api/v1/functions/canaried`)).json()) as {
        traffic: Record<string, number>;
        canary: { state: string; reason?: string };
      };
    const statuses: number[] = [];
    const decided = await waitFor(
      'c to decide the canary',
      async () => {
        for (let i = 0; i < 4; i++) {
          const r = await fetch(`${c.url}/fn/canaried`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ x: [[1, 2, 3, 4]] }),
          });
          statuses.push(r.status);
          await r.arrayBuffer();
        }
        return info();
      },
      (i) => i.canary.state !== 'watching',
      { timeoutMs: 90_000, intervalMs: 200 },
    );
    expect(decided.canary).toMatchObject({
      state: 'rolled-back',
      reason: expect.stringMatching(/^v2 failed \d+ of \d+ calls \(100\.0%\) against 0\.0% on v1/),
    });
    expect(decided.traffic).toEqual({ 1: 100 });
    expect(statuses).toContain(500);
    const log = (
      (await (await fetch(`${c.url}/api/v1/functions/canaried/logs`)).json()) as { entries: { msg: string }[] }
    ).entries.map((e) => e.msg);
    expect(log).toContain('canary: its watcher stopped; this node watches v2 again for 600 s');
    expect(log.some((m) => m.startsWith('canary: rolled back to v1 100%: v2 failed'))).toBe(true);
    // Every call after it goes to v1.
    const after = await fetch(`${c.url}/fn/canaried`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ x: [[1, 2, 3, 4]] }),
    });
    expect([after.status, after.headers.get('hearth-version')]).toEqual([200, '1']);
  });
});
