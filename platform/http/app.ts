/**
 * The HTTP front door (hono): health, the management API (/api/v1), function URLs (/fn), and
 * KServe v2 / Open Inference Protocol with Triton's binary tensor and repository extensions (/v2).
 * Errors become `{"error", "code"}` in one place (./errors.ts).
 */
import { Readable } from 'node:stream';

import { Hono } from 'hono';
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';

import { InvalidInputError, JobNotFoundError, UnsupportedError } from '../../sdk/errors.js';
import {
  DeployRequestSchema,
  ImportRequestSchema,
  ScalingRequestSchema,
  SecretRequestSchema,
  TrafficRequestSchema,
} from '../../sdk/api/index.js';
import type { Catalog } from '../../sdk/api/index.js';
import { parseSpec } from '../../sdk/spec/index.js';
import type { ArtifactStore } from '../artifacts/index.js';
import type { SecretStore } from '../secrets/index.js';
import { checkSha } from '../artifacts/index.js';
import type { ApiKey } from '../config.js';
import type { Logger } from '../log.js';
import type { FunctionService, LogEntry } from '../functions/index.js';
import type { JobQueue } from '../jobs/index.js';
import { callerId, jobQuery, jobView, encodeCursor } from '../jobs/index.js';
import { findKey, parseVersion } from '../auth.js';
import type { Kserve } from '../kserve/index.js';
import { serveConsole } from './console.js';
import { httpStatus } from './errors.js';
import { jsonBody } from './json-body.js';
import { kserveRoutes } from './kserve-routes.js';
import type { AppEnv } from './middleware.js';
import { auth, errorResponse, limit, owner } from './middleware.js';

export interface AppOptions {
  service: FunctionService;
  jobs: JobQueue;
  artifacts: ArtifactStore;
  /** `/api/v1/secrets`: names and times out, values in only. */
  secrets?: SecretStore;
  apiKeys: ApiKey[];
  maxBodyBytes: number;
  /** Largest artifact upload (default 16 GiB). */
  maxArtifactBytes?: number;
  /** Told the size of every artifact upload the node stores (a metric). */
  onUpload?: (bytes: number) => void;
  /** False while the node starts or drains: connections close after their response. */
  ready: () => boolean;
  /** The KServe protocol's core, which the /v2 routes speak. */
  kserve: Kserve;
  /** No API key, loopback bind (Config.loopbackGuard): form and text/plain bodies are refused. */
  loopbackGuard?: boolean;
  /** Where unexpected errors and the detail of errors go (the `http` component's logger). */
  log?: Logger;
}

/** Requests being handled, so a drain can wait for their responses to be written. */
export class InFlight {
  #count = 0;
  #waiters: (() => void)[] = [];

  enter(): void {
    this.#count++;
  }

  leave(): void {
    if (--this.#count === 0) for (const w of this.#waiters.splice(0)) w();
  }

  get count(): number {
    return this.#count;
  }

  idle(): Promise<void> {
    return this.#count === 0 ? Promise.resolve() : new Promise((resolve) => this.#waiters.push(resolve));
  }
}

export function createApp(o: AppOptions & { inflight?: InFlight }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const { service } = o;
  if (o.inflight) {
    const inflight = o.inflight;
    app.use('*', async (c, next) => {
      inflight.enter();
      try {
        await next();
        // While draining, no connection is kept alive past its response.
        if (!o.ready()) c.header('connection', 'close');
      } finally {
        inflight.leave();
      }
    });
  }
  app.onError((error, c) => errorResponse(c, error, o.log));
  app.notFound((c) => c.json({ error: `no route ${c.req.method} ${c.req.path}`, code: 'NOT_FOUND' }, 404));

  // --- KServe v2 beside infer (metadata, config, statistics, shared memory, repository) --------------
  app.route(
    '/',
    kserveRoutes({
      kserve: o.kserve,
      apiKeys: o.apiKeys,
      // A load's file: contents ride in its JSON, base64: at most what a string holds.
      maxLoadBytes: Math.min(o.maxArtifactBytes ?? 16 * 2 ** 30, 512 * 2 ** 20),
      loopbackGuard: o.loopbackGuard,
    }),
  );

  // --- artifacts -----------------------------------------------------------------------------------
  const admin = auth(o.apiKeys, 'admin');
  // HEAD (hono answers it from this GET route): is the artifact there, and how big; GET: as JSON.
  app.get('/api/v1/artifacts/:sha', admin, async (c) => {
    const sha = c.req.param('sha');
    checkSha(sha);
    const info = await o.artifacts.stat(sha);
    if (!info) return c.json({ error: `artifact ${sha} is not in the store`, code: 'ARTIFACT_NOT_FOUND' }, 404);
    c.header('X-Artifact-Size', String(info.size));
    return c.json(info);
  });
  app.put('/api/v1/artifacts/:sha', admin, limit(o.maxArtifactBytes ?? 16 * 2 ** 30), async (c) => {
    const sha = c.req.param('sha');
    checkSha(sha);
    const existing = await o.artifacts.stat(sha);
    if (existing) return c.json({ ...existing, created: false });
    const body = c.req.raw.body;
    if (!body) throw new InvalidInputError('send the artifact bytes as the request body');
    const info = await o.artifacts.put(
      sha,
      Readable.fromWeb(body as import('node:stream/web').ReadableStream<Uint8Array>),
    );
    o.onUpload?.(info.size);
    return c.json({ ...info, created: true }, 201);
  });
  app.post('/api/v1/artifacts/import', admin, jsonBody(ImportRequestSchema), async (c) => {
    const { uri } = c.req.valid('json');
    return c.json(await o.artifacts.importS3(uri), 201);
  });

  // --- functions -----------------------------------------------------------------------------------
  app.post('/api/v1/functions', admin, limit(o.maxBodyBytes), jsonBody(DeployRequestSchema), async (c) => {
    const body = c.req.valid('json');
    const spec = parseSpec(body.spec);
    const { model, hook } = body.artifacts;
    const version = await service.deploy(spec, { model, ...(hook ? { hook } : {}) }, { keepTraffic: body.keepTraffic });
    o.jobs.serve(spec.name);
    return c.json(
      {
        name: spec.name,
        version: version.version,
        status: version.status,
        reason: version.reason,
        url: `/fn/${encodeURIComponent(spec.name)}`,
      },
      version.status === 'failed' ? 422 : version.status === 'pending' ? 202 : 201,
    );
  });
  app.get('/api/v1/functions', admin, async (c) => {
    const records = await service.registry.list();
    return c.json({
      functions: records.map((r) => ({
        name: r.name,
        createdAt: r.createdAt,
        versions: r.versions.length,
        latest: r.versions.at(-1)?.version,
        traffic: r.traffic,
      })),
    });
  });
  app.get('/api/v1/functions/:name', admin, async (c) => {
    const record = await service.get(c.req.param('name'));
    await service.refreshStats();
    const pools = service.pools().filter((p) => p.function === record.name);
    return c.json({ ...record, pools });
  });
  // The function's time series: one sample a second for 15 minutes, per version.
  app.get('/api/v1/functions/:name/series', admin, async (c) => {
    const name = c.req.param('name');
    await service.get(name);
    return c.json({ name, versions: service.series.of(name, parseVersion(c.req.query('version'))) });
  });
  // The function's own log: the last entries, or (follow=1) those and every new one, as server-sent events.
  app.get('/api/v1/functions/:name/logs', admin, async (c) => {
    const name = c.req.param('name');
    await service.get(name);
    const version = parseVersion(c.req.query('version'));
    const limitText = c.req.query('limit');
    const limit = limitText === undefined ? 200 : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      throw new InvalidInputError('limit must be an integer from 1 to 1000');
    const sinceText = c.req.query('since');
    const since = sinceText === undefined ? undefined : Number(sinceText);
    if (since !== undefined && !Number.isFinite(since))
      throw new InvalidInputError('since is a time in milliseconds since the epoch');
    const entries = service.logs.recent(name, { version, limit, since });
    if (c.req.query('follow') !== '1') return c.json({ entries });
    return streamSSE(c, async (stream) => {
      for (const e of entries) await stream.writeSSE({ event: 'log', data: JSON.stringify(e) });
      const queued: LogEntry[] = [];
      let wake: (() => void) | undefined;
      const stop = service.logs.follow(name, version, (e) => {
        queued.push(e);
        wake?.();
      });
      stream.onAbort(() => wake?.());
      let idle = 0;
      try {
        // Until the client goes, or the node drains (a follow must not hold a drain open).
        while (!stream.aborted && !stream.closed && o.ready()) {
          if (queued.length === 0) {
            await new Promise<void>((resolve) => {
              wake = resolve;
              setTimeout(resolve, 1000).unref();
            });
            wake = undefined;
            // A comment every 15 s keeps proxies from closing a quiet stream.
            if (queued.length === 0 && ++idle % 15 === 0) await stream.write(': keep-alive\n\n');
          }
          for (const e of queued.splice(0)) await stream.writeSSE({ event: 'log', data: JSON.stringify(e) });
        }
      } finally {
        stop();
      }
    });
  });
  app.delete('/api/v1/functions/:name', admin, async (c) => {
    const name = c.req.param('name');
    await service.get(name);
    await service.delete(name);
    return c.json({ deleted: name });
  });
  app.put('/api/v1/functions/:name/traffic', admin, jsonBody(TrafficRequestSchema), async (c) => {
    const { traffic } = c.req.valid('json');
    const record = await service.setTraffic(c.req.param('name'), traffic);
    return c.json({ name: record.name, traffic: record.traffic });
  });
  app.post('/api/v1/functions/:name/rollback', admin, async (c) => {
    const { record, from } = await service.rollback(c.req.param('name'));
    return c.json({ name: record.name, traffic: record.traffic, from });
  });
  app.patch('/api/v1/functions/:name/scaling', admin, jsonBody(ScalingRequestSchema), async (c) => {
    const { version, ...change } = c.req.valid('json');
    const name = c.req.param('name');
    return c.json({ name, versions: await service.setScaling(name, change, version) });
  });
  // --- secrets: values go in and never come out -------------------------------------------------
  const secrets = () => {
    if (!o.secrets) throw new UnsupportedError('this node keeps no secrets');
    return o.secrets;
  };
  app.get('/api/v1/secrets', admin, async (c) => c.json({ secrets: await secrets().list() }));
  app.put('/api/v1/secrets/:name', admin, limit(256 * 1024), jsonBody(SecretRequestSchema), async (c) =>
    c.json(await secrets().set(c.req.param('name'), c.req.valid('json').value)),
  );
  app.delete('/api/v1/secrets/:name', admin, async (c) => {
    const name = c.req.param('name');
    return c.json({ name, deleted: await secrets().delete(name) });
  });

  app.get('/api/v1/pools', admin, async (c) => {
    await service.refreshStats();
    return c.json({ pools: service.clusterPools() });
  });

  app.get('/api/v1/nodes', admin, (c) => c.json({ nodes: service.nodes() }));

  // The console (a static page that calls this API).
  serveConsole(app);

  // Function URLs and KServe infer are served by ./hot-routes.ts, ahead of this app.
  const invoke = auth(o.apiKeys, 'invoke');

  /** Whether the caller may manage (no keys configured, or an admin key). */
  const isAdmin = (c: Context<AppEnv>) => o.apiKeys.length === 0 || findKey(o.apiKeys, owner(c))?.scope === 'admin';

  // What any key may call (the console's view for an invoke key): inputs and outputs, no internals.
  app.get('/api/v1/catalog', invoke, async (c) => {
    const io = (t: { name: string; dtype: string; dims: number[] }) => ({ name: t.name, dtype: t.dtype, dims: t.dims });
    const records = await service.registry.list();
    const catalog: Catalog = {
      scope: isAdmin(c) ? 'admin' : 'invoke',
      functions: records.map((r) => ({
        name: r.name,
        traffic: r.traffic,
        versions: r.versions.map((v) => ({
          version: v.version,
          status: v.status,
          inputs: v.spec.inputs.map(io),
          outputs: v.spec.outputs.map(io),
          maxBatchSize: v.spec.maxBatchSize,
          hook: v.spec.hook !== undefined,
        })),
      })),
    };
    return c.json(catalog);
  });

  // --- async invocations ------------------------------------------------------------------------------
  // A job is its submitter's: another invoke key is told it does not exist; an admin key reads all.
  const job = async (c: Context<AppEnv>) => {
    const id = c.req.param('id')!;
    const record = await o.jobs.get(id);
    if (!record || (!isAdmin(c) && (record.owner ?? '') !== callerId(owner(c))))
      throw new JobNotFoundError(`no job ${id} (unknown, or its record expired)`);
    return record;
  };
  // The caller's jobs (an admin key's: everyone's), newest first, without their results.
  app.get('/api/v1/jobs', invoke, async (c) => {
    const page = await o.jobs.list(jobQuery(c.req.query(), isAdmin(c) ? undefined : callerId(owner(c))));
    return c.json({
      jobs: page.records.map((r) => jobView(r, { result: false })),
      ...(page.next ? { next: encodeCursor(page.next) } : {}),
    });
  });
  app.get('/api/v1/jobs/:id', invoke, async (c) => c.json(jobView(await job(c))));
  // The result's own bytes and content type, as the synchronous call would have answered.
  app.get('/api/v1/jobs/:id/result', invoke, async (c) => {
    const record = await job(c);
    if (record.status === 'failed') return c.json(record.error, httpStatus(record.error?.code ?? 'INTERNAL') as 400);
    if (!record.result) return c.json(jobView(record), 202);
    return new Response(record.result.body.slice(), {
      status: 200,
      headers: { 'content-type': record.result.contentType, 'hearth-version': String(record.result.version) },
    });
  });

  return app;
}
