/**
 * Async invocations: 202 + job id, status until succeeded with the result python3-torch computes,
 * idempotency keys that outlive the queue's own retention, bad input failed at once without retry,
 * webhooks signed as Standard Webhooks say (checked here with an HMAC computed independently) and
 * retried — in process (embedded) and on BullMQ with a real Redis. The BullMQ adapter's own cases
 * (its reconciler, a Redis that may evict keys): ./bull-queue.test.ts.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../../platform/node/index.js';
import { modelPath } from '../../helpers/fixtures.js';
import type { JobView } from '../../helpers/jobs.js';
import { receiver } from '../../helpers/jobs.js';
import { dropKeys, postFunction, testNode, uniquePrefix, upload } from '../../helpers/node.js';
import { maxAbsDiff } from '../../helpers/random.js';
import { pythonForwardMany } from '../../helpers/reference.js';
import { SLOW_SPEC, SMALL_SPEC, SMALL_X } from '../../helpers/specs.js';
import { waitFor } from '../../helpers/wait.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-jobs-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const SECRET_BYTES = randomBytes(24);
const SECRET = `whsec_${SECRET_BYTES.toString('base64')}`;
const SPEC = SMALL_SPEC;
const X = SMALL_X;
const reference = pythonForwardMany(modelPath('small'), [
  [{ dtype: 'FP32', shape: [2, 4], data: Float32Array.from(X.flat()) }],
])[0]!.outputs[0]!.data as Float32Array;

function suite(
  label: string,
  env: () => Record<string, string>,
  cleanup: () => Promise<void> = async () => undefined,
): void {
  describe(label, () => {
    let node: HearthNode;
    let url: string;
    beforeAll(async () => {
      node = await testNode(join(dir, label.replace(/\W+/g, '-')), {
        HEARTH_WEBHOOK_SECRET: SECRET,
        HEARTH_JOB_BACKOFF_MS: '50',
        HEARTH_JOB_ATTEMPTS: '8',
        HEARTH_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
        ...env(),
      });
      url = node.httpUrl;
      const model = await upload(url, new Uint8Array(await readFile(modelPath('small'))));
      const r = await postFunction(url, { spec: SPEC, artifacts: { model } });
      expect(r.status).toBe(201);
      const fails = await upload(url, new Uint8Array(await readFile(modelPath('fails'))));
      const failsSpec = { ...SPEC, name: 'fails', outputs: [{ name: 'y', dtype: 'FP32', dims: [4] }] };
      expect((await postFunction(url, { spec: failsSpec, artifacts: { model: fails } })).status).toBe(201);
      // One slow forward at a time and room for one more: the rest are refused with QUEUE_FULL.
      const slow = await upload(url, new Uint8Array(await readFile(modelPath('slow'))));
      const slowSpec = { ...SLOW_SPEC, batching: { maxQueueSize: 1 } };
      expect((await postFunction(url, { spec: slowSpec, artifacts: { model: slow } })).status).toBe(201);
    });
    afterAll(async () => {
      await node?.close();
      await cleanup();
    });

    const submit = (body: unknown, headers: Record<string, string> = {}, query = '') =>
      fetch(`${url}/fn/small${query}`, {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json', prefer: 'respond-async', ...headers },
      });
    const settled = (id: string): Promise<JobView> =>
      waitFor(
        `job ${id} to finish`,
        async () => (await (await fetch(`${url}/api/v1/jobs/${id}`)).json()) as JobView,
        (job) => job.status === 'succeeded' || job.status === 'failed',
        { timeoutMs: 30_000, intervalMs: 25 },
      );

    it("answers 202 with a job id, then the job succeeds with python3-torch's result", async () => {
      const r = await submit({ inputs: { x: X } });
      expect(r.status).toBe(202);
      expect(r.headers.get('preference-applied')).toBe('respond-async');
      const { id, statusUrl } = (await r.json()) as { id: string; statusUrl: string };
      expect(r.headers.get('location')).toBe(statusUrl);
      const job = await settled(id);
      expect(job).toMatchObject({ status: 'succeeded', attempts: 1 });
      expect(maxAbsDiff(Float32Array.from(job.result!.json!.outputs.y.flat()), reference)).toBeLessThan(1e-6);
      const raw = await fetch(`${url}/api/v1/jobs/${id}/result`);
      expect(raw.headers.get('content-type')).toMatch(/^application\/json/);
      expect(
        maxAbsDiff(
          Float32Array.from(((await raw.json()) as { outputs: { y: number[][] } }).outputs.y.flat()),
          reference,
        ),
      ).toBeLessThan(1e-6);
    });

    it('takes ?async=1 as well as the Prefer header', async () => {
      const r = await fetch(`${url}/fn/small?async=1`, {
        method: 'POST',
        body: JSON.stringify({ inputs: { x: X } }),
        headers: { 'content-type': 'application/json' },
      });
      expect(r.status).toBe(202);
      expect((await settled(((await r.json()) as { id: string }).id)).status).toBe('succeeded');
    });

    it('gives the same job for a repeated idempotency key, also after the job finished', async () => {
      const key = `order-${randomBytes(4).toString('hex')}`;
      const first = (await (await submit({ inputs: { x: X } }, { 'idempotency-key': key })).json()) as { id: string };
      await settled(first.id);
      const again = await submit({ inputs: { x: X } }, { 'idempotency-key': key });
      expect(again.status).toBe(202);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(((await again.json()) as { id: string }).id).toBe(first.id);
      const other = (await (await submit({ inputs: { x: X } }, { 'idempotency-key': `${key}-b` })).json()) as {
        id: string;
      };
      expect(other.id).not.toBe(first.id);
    });

    it('fails bad input at once, without retrying it', async () => {
      const { id } = (await (await submit({ inputs: { x: [[1, 2, 3]] } })).json()) as { id: string };
      const job = await settled(id);
      expect(job).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'INVALID_INPUT' } });
      expect((await fetch(`${url}/api/v1/jobs/${id}/result`)).status).toBe(400);
    });

    it("fails a model's own error at once, with its headline and the request's id, not its traceback", async () => {
      const r = await fetch(`${url}/fn/fails`, {
        method: 'POST',
        body: JSON.stringify({ inputs: { x: [[-1, -2, -3, -4]] } }),
        headers: { 'content-type': 'application/json', prefer: 'respond-async', 'x-request-id': 'job-req-1' },
      });
      const { id } = (await r.json()) as { id: string };
      const job = (await settled(id)) as JobView & { requestId?: string; error?: { error: string } };
      expect(job).toMatchObject({ status: 'failed', attempts: 1, requestId: 'job-req-1' });
      expect(job.error).toEqual({
        code: 'INFERENCE_FAILED',
        error: 'builtins.RuntimeError: negative input is not allowed',
      });
    });

    it('retries jobs refused with QUEUE_FULL until they run, each try with its body', async () => {
      const body = { inputs: { x: Array.from({ length: 4 }, () => new Array(512).fill(0.01)), n: 300 } };
      const ids = await Promise.all(
        Array.from({ length: 8 }, async () => {
          const r = await fetch(`${url}/fn/slow`, {
            method: 'POST',
            body: JSON.stringify(body),
            headers: { 'content-type': 'application/json', prefer: 'respond-async' },
          });
          expect(r.status).toBe(202);
          return ((await r.json()) as { id: string }).id;
        }),
      );
      const jobs = await Promise.all(ids.map((id) => settled(id)));
      for (const job of jobs) expect(job, JSON.stringify(job.error)).toMatchObject({ status: 'succeeded' });
      // Some ran on a second or later try: they had been refused, and their bodies were whole again.
      expect(Math.max(...jobs.map((j) => j.attempts))).toBeGreaterThan(1);
    });

    it('refuses an unknown function, a non-http webhook and an unknown job id', async () => {
      const unknown = await fetch(`${url}/fn/nope`, {
        method: 'POST',
        body: '{}',
        headers: { prefer: 'respond-async' },
      });
      expect(unknown.status).toBe(404);
      const ftp = await submit({ inputs: { x: X } }, { 'hearth-webhook-url': 'ftp://127.0.0.1/x' });
      expect(ftp.status).toBe(400);
      // Not in HEARTH_WEBHOOK_ALLOW_HOSTS: plain http, loopback, private and metadata addresses are refused.
      for (const hook of [
        'http://example.com/x',
        'https://127.0.0.2/x',
        'https://169.254.169.254/latest/meta-data',
        'https://10.1.2.3/x',
        'https://[::1]/x',
        'https://[::ffff:192.168.0.1]/x',
      ]) {
        const r = await submit({ inputs: { x: X } }, { 'hearth-webhook-url': hook });
        expect(r.status, hook).toBe(400);
      }
      const missing = await fetch(`${url}/api/v1/jobs/no-such-job`);
      expect(missing.status).toBe(404);
      expect(((await missing.json()) as { code: string }).code).toBe('JOB_NOT_FOUND');
    });

    it('calls the webhook with a Standard Webhooks signature, retrying a failing receiver', async () => {
      const hook = await receiver(1);
      const id0 = randomBytes(4).toString('hex');
      try {
        // A token in the query, as receivers often take one: it never shows in what the API returns.
        const target = `${hook.url}?token=s3cret-${id0}`;
        const { id } = (await (await submit({ inputs: { x: X } }, { 'hearth-webhook-url': target })).json()) as {
          id: string;
        };
        await settled(id);
        await waitFor(
          'the webhook',
          () => hook.received.length,
          (n) => n > 0,
          { intervalMs: 25 },
        );
        expect(hook.tries).toBe(2);
        const [{ headers, body }] = hook.received as [{ headers: Record<string, string>; body: string }];
        const expected = createHmac('sha256', SECRET_BYTES)
          .update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`)
          .digest('base64');
        expect(headers['webhook-signature']).toBe(`v1,${expected}`);
        expect(Math.abs(Number(headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
        const message = JSON.parse(body) as { type: string; data: JobView };
        expect(message.type).toBe('invocation.succeeded');
        expect(message.data.id).toBe(id);
        expect(maxAbsDiff(Float32Array.from(message.data.result!.json!.outputs.y.flat()), reference)).toBeLessThan(
          1e-6,
        );
        // The job's record shows both tries: the receiver's 500, then its 204 (and not the query).
        const job = await waitFor(
          'both deliveries on the record',
          async () => (await (await fetch(`${url}/api/v1/jobs/${id}`)).json()) as JobView,
          (j) => (j.deliveries?.length ?? 0) >= 2,
          { intervalMs: 25 },
        );
        expect(job.deliveries!.map((d) => [d.ok, d.status])).toEqual([
          [false, 500],
          [true, 204],
        ]);
        expect(job.webhook).toBe(hook.url);
        expect(job.deliveries![0]!.error).toContain(`${hook.url} answered 500`);
        expect(JSON.stringify(job)).not.toContain('s3cret');
        expect(message.data.deliveries).toBeUndefined();
      } finally {
        await hook.close();
      }
    });

    it('lists jobs newest first, by state and function, a page at a time, without their results', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push(((await (await submit({ inputs: { x: X } })).json()) as { id: string }).id);
      const bad = ((await (await submit({ inputs: { x: [[1, 2, 3]] } })).json()) as { id: string }).id;
      for (const id of [...ids, bad]) await settled(id);
      const list = async (query: string) =>
        (await (await fetch(`${url}/api/v1/jobs${query}`)).json()) as { jobs: JobView[]; next?: string };
      const all = (await list('?limit=200')).jobs;
      // Newest first: creation times never rise, and a tie goes by id, descending.
      for (let i = 1; i < all.length; i++) {
        const [a, b] = [all[i - 1]!, all[i]!];
        const [ta, tb] = [Date.parse(a.createdAt!), Date.parse(b.createdAt!)];
        expect(ta > tb || (ta === tb && a.id > b.id)).toBe(true);
      }
      expect(all.map((j) => j.id)).toEqual(expect.arrayContaining([...ids, bad]));
      expect(all.every((j) => j.result === undefined)).toBe(true);
      const failed = (await list('?status=failed&limit=200')).jobs;
      expect(failed.length).toBeGreaterThan(0);
      expect(failed.every((j) => j.status === 'failed')).toBe(true);
      expect(failed.map((j) => j.id)).toContain(bad);
      expect(failed.find((j) => j.id === bad)!.error!.code).toBe('INVALID_INPUT');
      // Two at a time, following `next`, is the same listing as one page.
      const small = all.filter((j) => j.function === 'small').map((j) => j.id);
      const paged: string[] = [];
      let before = '';
      for (let pages = 0; pages < 100; pages++) {
        const page = await list(`?function=small&limit=2${before ? `&before=${before}` : ''}`);
        expect(page.jobs.length).toBeLessThanOrEqual(2);
        paged.push(...page.jobs.map((j) => j.id));
        if (!page.next) break;
        before = page.next;
      }
      expect(paged).toEqual(small);
      expect((await fetch(`${url}/api/v1/jobs?status=done`)).status).toBe(400);
      expect((await fetch(`${url}/api/v1/jobs?before=nope`)).status).toBe(400);
    });
  });
}

suite('async invocations in process (embedded default)', () => ({}));
// Hooks on threads of the node itself: a try hands its body to a hook thread, which takes it.
suite('async invocations in process, without runner processes', () => ({ HEARTH_ISOLATION: 'none' }));

const prefix = uniquePrefix();
suite(
  'async invocations on BullMQ',
  () => ({ REDIS_URL: 'redis://127.0.0.1:6379', HEARTH_REDIS_PREFIX: prefix }),
  async () => {
    await dropKeys(prefix);
  },
);
