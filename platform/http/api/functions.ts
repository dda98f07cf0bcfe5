/**
 * /api/v1/functions: deploy, list, describe and delete functions; their traffic, rollback and
 * scaling; their time series and their own log (server-sent events when followed). And
 * /api/v1/catalog: what any key may call.
 */
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';

import { DeployRequestSchema, ScalingRequestSchema, TrafficRequestSchema } from '../../../sdk/api/index.js';
import type {
  Catalog,
  DeployResult,
  FunctionDeleted,
  FunctionInfo,
  FunctionList,
  FunctionLogEntry,
  LogList,
  RollbackResult,
  ScalingResult,
  SeriesResult,
  TrafficResult,
  Reply,
} from '../../../sdk/api/index.js';
import { InvalidInputError } from '../../../sdk/errors.js';
import { parseSpec } from '../../../sdk/spec/index.js';
import type { ApiKey } from '../../config.js';
import type { ManagedFunctions } from '../../functions/serving.js';
import { parseVersion } from '../../registry/index.js';
import { jsonBody } from '../json-body.js';
import type { AppEnv } from '../middleware.js';
import { auth, isAdmin, limit } from '../middleware.js';

const LOG_LEVELS: FunctionLogEntry['level'][] = ['debug', 'info', 'warn', 'error'];
export interface FunctionRouteOptions {
  functions: ManagedFunctions;
  apiKeys: ApiKey[];
  maxBodyBytes: number;
  /** A deployed function's async jobs are taken off its queue from then on. */
  serveJobs: (name: string) => void;
  /** False while the node drains: a followed log ends. */
  ready: () => boolean;
}

export function functionRoutes(o: FunctionRouteOptions): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const { functions } = o;
  const admin = auth(o.apiKeys, 'admin');

  app.post('/functions', admin, limit(o.maxBodyBytes), jsonBody(DeployRequestSchema), async (c) => {
    const body = c.req.valid('json');
    const spec = parseSpec(body.spec);
    const { model, hook, example } = body.artifacts;
    const version = await functions.deploy(
      spec,
      { model, ...(hook ? { hook } : {}), ...(example ? { example } : {}) },
      { keepTraffic: body.keepTraffic, canary: body.canary },
    );
    o.serveJobs(spec.name);
    const reply: Reply<DeployResult> = {
      name: spec.name,
      version: version.version,
      status: version.status,
      reason: version.reason,
      url: `/fn/${encodeURIComponent(spec.name)}`,
      ...(version.canary ? { canary: version.canary } : {}),
    };
    return c.json(reply, version.status === 'failed' ? 422 : version.status === 'pending' ? 202 : 201);
  });
  app.get('/functions', admin, async (c) => {
    const records = await functions.list();
    return c.json({
      functions: records.map((r) => ({
        name: r.name,
        createdAt: r.createdAt,
        versions: r.versions.length,
        latest: r.versions.at(-1)?.version,
        traffic: r.traffic,
        health: functions.health(r),
      })),
    } satisfies Reply<FunctionList>);
  });
  app.get('/functions/:name', admin, async (c) => {
    const record = await functions.get(c.req.param('name'));
    await functions.refreshStats();
    const pools = functions.pools().filter((p) => p.function === record.name);
    const canary = functions.canaryOf(record);
    return c.json({ ...record, ...(canary ? { canary } : {}), pools } satisfies Reply<FunctionInfo>);
  });
  // The function's time series: one sample a second for 15 minutes, per version.
  app.get('/functions/:name/series', admin, async (c) => {
    const name = c.req.param('name');
    await functions.get(name);
    return c.json({
      name,
      versions: functions.series.of(name, parseVersion(c.req.query('version'))),
    } satisfies Reply<SeriesResult>);
  });
  // The function's own log: the last entries, or (follow=1) those and every new one, as server-sent events.
  app.get('/functions/:name/logs', admin, async (c) => {
    const name = c.req.param('name');
    await functions.get(name);
    const version = parseVersion(c.req.query('version'));
    const limitText = c.req.query('limit');
    const count = limitText === undefined ? 200 : Number(limitText);
    if (!Number.isInteger(count) || count < 1 || count > 1000)
      throw new InvalidInputError('limit must be an integer from 1 to 1000');
    const sinceText = c.req.query('since');
    const since = sinceText === undefined ? undefined : Number(sinceText);
    if (since !== undefined && !Number.isFinite(since))
      throw new InvalidInputError('since is a time in milliseconds since the epoch');
    const level = c.req.query('level');
    if (level !== undefined && !LOG_LEVELS.includes(level as FunctionLogEntry['level']))
      throw new InvalidInputError(`level must be one of ${LOG_LEVELS.join(', ')} (the entries at it or above)`);
    const least = level as FunctionLogEntry['level'] | undefined;
    const entries = functions.logs.recent(name, { version, limit: count, since, level: least });
    if (c.req.query('follow') !== '1') return c.json({ entries } satisfies Reply<LogList>);
    return streamSSE(c, async (stream) => {
      for (const e of entries) await stream.writeSSE({ event: 'log', data: JSON.stringify(e) });
      const queued: FunctionLogEntry[] = [];
      let wake: (() => void) | undefined;
      const stop = functions.logs.follow(
        name,
        version,
        (e) => {
          queued.push(e);
          wake?.();
        },
        least,
      );
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
  app.delete('/functions/:name', admin, async (c) => {
    const name = c.req.param('name');
    await functions.get(name);
    await functions.delete(name);
    return c.json({ deleted: name } satisfies Reply<FunctionDeleted>);
  });
  app.put('/functions/:name/traffic', admin, jsonBody(TrafficRequestSchema), async (c) => {
    const { traffic } = c.req.valid('json');
    const record = await functions.setTraffic(c.req.param('name'), traffic);
    return c.json({ name: record.name, traffic: record.traffic } satisfies Reply<TrafficResult>);
  });
  app.post('/functions/:name/rollback', admin, async (c) => {
    const { record, from } = await functions.rollback(c.req.param('name'));
    return c.json({ name: record.name, traffic: record.traffic, from } satisfies Reply<RollbackResult>);
  });
  app.patch('/functions/:name/scaling', admin, jsonBody(ScalingRequestSchema), async (c) => {
    const { version, ...change } = c.req.valid('json');
    const name = c.req.param('name');
    return c.json({ name, versions: await functions.setScaling(name, change, version) } satisfies Reply<ScalingResult>);
  });

  // What any key may call (the console's view for an invoke key): inputs and outputs, no internals.
  app.get('/catalog', auth(o.apiKeys, 'invoke'), async (c) => {
    const io = (t: { name: string; dtype: string; dims: number[] }) => ({ name: t.name, dtype: t.dtype, dims: t.dims });
    const records = await functions.list();
    return c.json({
      scope: isAdmin(c, o.apiKeys) ? 'admin' : 'invoke',
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
    } satisfies Reply<Catalog>);
  });
  return app;
}
