/**
 * Readiness that says what it means: /v2/health/ready is 503 until every function that keeps
 * instances warm (scaling.minInstances ≥ 1) is warm, and from the first moment of a drain; a model's
 * ready route is true when it can answer now or by an allowed cold start, and false when unloaded or
 * while the node drains.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { loadConfig } from '../../platform/config/index.js';
import { startNode } from '../../platform/node/index.js';
import { modelPath, REPO_ROOT } from '../helpers/fixtures.js';
import { deployFixture, onPickedPort, postFunction, testNode, upload } from '../helpers/node.js';
import { SMALL_SPEC } from '../helpers/specs.js';
import { waitFor } from '../helpers/wait.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-ready-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const status = async (url: string) => (await fetch(url).catch(() => undefined))?.status;

describe('readiness', () => {
  it('is 503 until the functions that keep instances warm are warm, then 200; a drain makes it 503 at once', async () => {
    const data = join(dir, 'node');
    // A first node deploys two functions: one kept warm, one that scales to zero.
    const first = await testNode(data);
    const model = await upload(first.httpUrl, new Uint8Array(await readFile(modelPath('small'))));
    for (const [name, minInstances] of [
      ['kept', 1],
      ['idle', 0],
    ] as const) {
      const spec = { ...SMALL_SPEC, name, scaling: { minInstances } };
      expect((await postFunction(first.httpUrl, { spec, artifacts: { model } })).status).toBe(201);
    }
    await first.close();

    // A second node on the same data starts: poll its readiness from the moment its port opens.
    const {
      url: base,
      started: starting,
      seen: { seen, poolsAtReady },
    } = await onPickedPort(
      (port) =>
        startNode(
          loadConfig({
            HEARTH_HTTP_PORT: String(port),
            HEARTH_GRPC_PORT: '0',
            HEARTH_METRICS_PORT: '0',
            HEARTH_DATA_DIR: data,
            HEARTH_LOG_LEVEL: 'silent',
          }),
        ),
      async (url, failed) => {
        const seen: (number | undefined)[] = [];
        let poolsAtReady: { function: string; state: string }[] | undefined;
        for (let i = 0; i < 3000 && poolsAtReady === undefined && !failed(); i++) {
          const s = await status(`${url}/v2/health/ready`);
          seen.push(s);
          if (s === 200) poolsAtReady = ((await (await fetch(`${url}/api/v1/pools`)).json()) as { pools: [] }).pools;
          else await new Promise((r) => setTimeout(r, 10));
        }
        return { seen, poolsAtReady };
      },
      (error) => /EADDRINUSE/.test((error as Error).message),
    );
    const node = await starting;
    try {
      expect(seen).toContain(503);
      // When it first said ready, the kept function was warm, and the other was not loaded at all.
      expect(poolsAtReady?.find((p) => p.function === 'kept')?.state).toBe('warm');
      expect(poolsAtReady?.find((p) => p.function === 'idle')).toBeUndefined();
      // The scaled-to-zero model is ready: a cold start is allowed and answers.
      expect((await fetch(`${base}/v2/models/idle/ready`)).status).toBe(200);
      // Unloaded, it is not.
      expect((await fetch(`${base}/v2/repository/models/idle/unload`, { method: 'POST' })).status).toBe(200);
      expect((await fetch(`${base}/v2/models/idle/ready`)).status).toBe(503);

      const draining = node.drain();
      expect(await status(`${base}/v2/health/ready`)).toBe(503);
      await draining;
    } finally {
      await node.close();
    }
  });

  it('ends a drain by HEARTH_DRAIN_TIMEOUT_MS, answering what is left with 503, when a hook never settles', async () => {
    const node = await testNode(join(dir, 'drain'), { HEARTH_DRAIN_TIMEOUT_MS: '500' });
    // A hook whose promise never settles, allowed ten minutes: without the drain's deadline the
    // drain (and this test) would wait for them.
    const r = await deployFixture(
      node.httpUrl,
      { ...SMALL_SPEC, name: 'stuck', hook: 'hook.ts', limits: { hookTimeoutMs: 600_000 } },
      { model: 'small', hook: 'attacks' },
    );
    expect(r.status, await r.clone().text()).toBe(201);
    const stuck = fetch(`${node.httpUrl}/fn/stuck`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ attack: 'never' }),
    });
    await waitFor(
      'the request to be held by its pool',
      async () => (await node.service.pools()).find((p) => p.function === 'stuck')?.pending ?? 0,
      (n) => n > 0,
      { timeoutMs: 30_000 },
    );
    await node.drain();
    const answer = await stuck;
    expect(answer.status).toBe(503);
  });

  it('fails a job try past HEARTH_JOB_TIMEOUT_MS when its hook never settles, so the job ends', async () => {
    const node = await testNode(join(dir, 'job-timeout'), { HEARTH_JOB_TIMEOUT_MS: '1000', HEARTH_JOB_ATTEMPTS: '1' });
    try {
      const r = await deployFixture(
        node.httpUrl,
        { ...SMALL_SPEC, name: 'stuck', hook: 'hook.ts', limits: { hookTimeoutMs: 600_000 } },
        { model: 'small', hook: 'attacks' },
      );
      expect(r.status, await r.clone().text()).toBe(201);
      const submitted = await fetch(`${node.httpUrl}/fn/stuck`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', prefer: 'respond-async' },
        body: JSON.stringify({ attack: 'never' }),
      });
      expect(submitted.status).toBe(202);
      const { id } = (await submitted.json()) as { id: string };
      const job = await waitFor(
        'the job to end',
        async () =>
          (await (await fetch(`${node.httpUrl}/api/v1/jobs/${id}`)).json()) as {
            status: string;
            error?: { code: string };
          },
        (j) => j.status === 'failed' || j.status === 'succeeded',
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      expect(job.status).toBe('failed');
      expect(job.error?.code).toBe('DEADLINE_EXCEEDED');
    } finally {
      await node.close();
    }
  });

  it('never starts on a bad setting: one line naming it on stderr, exit 1, no stack trace', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'platform', 'entry', 'main.ts')], {
      cwd: REPO_ROOT,
      env: { ...process.env, HEARTH_API_KEYS: 'short:admin', HEARTH_HTTP_PORT: '0', HEARTH_DATA_DIR: join(dir, 'bad') },
      encoding: 'utf8',
    });
    expect(r.status).toBe(1);
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('{'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toEqual({
      level: 'fatal',
      msg: expect.stringMatching(/^HEARTH_API_KEYS: each entry must be KEY:SCOPE or KEY:SCOPE@TENANT/),
    });
    expect(r.stderr).not.toMatch(/\bat .*\.ts:\d+/);
  });
});
