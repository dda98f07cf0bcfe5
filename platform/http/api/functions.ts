/**
 * /api/v1/functions: deploy, list, describe and delete functions; their traffic, rollback and
 * scaling; their time series and their own log (./function-logs.ts). And /api/v1/catalog: what any
 * key may call (./catalog.ts).
 */
import type { Context, MiddlewareHandler } from 'hono';
import { Hono } from 'hono';

import { threadPlan } from '../../../runtime/index.js';
import type {
  DeployResult,
  FunctionDeleted,
  FunctionInfo,
  FunctionList,
  Reply,
  RollbackResult,
  ScalingResult,
  TrafficResult,
} from '../../../sdk/api/index.js';
import { DeployRequestSchema, ScalingRequestSchema, TrafficRequestSchema } from '../../../sdk/api/index.js';
import { parseSpec } from '../../../sdk/spec/index.js';
import type { ApiKey } from '../../config/index.js';
import type { ManagedFunctions } from '../../functions/serving.js';
import { managedFor } from '../../functions/tenant-view.js';
import { shownVersion } from '../../registry/index.js';
import { jsonBody } from '../json-body.js';
import type { AppEnv } from '../middleware.js';
import { auth, callerOf, limit } from '../middleware.js';
import { catalogRoute } from './catalog.js';
import { functionLogRoutes } from './function-logs.js';

export interface FunctionRouteOptions {
  functions: ManagedFunctions;
  apiKeys: ApiKey[];
  maxBodyBytes: number;
  /** A deployed function's async jobs are taken off its queue from then on. */
  serveJobs: (name: string) => void;

  /** False while the node drains: a followed log ends. */
  ready: () => boolean;
}

type Manage = MiddlewareHandler<AppEnv>;
/** The functions as the request's caller sees them: its tenant's (an admin's: all). */
const fnsOf = (c: Context<AppEnv>, o: FunctionRouteOptions) => managedFor(callerOf(c), o.functions);

export function functionRoutes(o: FunctionRouteOptions): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  // A deploy key manages its tenant's functions, an admin key every function.
  const manage = auth(o.apiKeys, 'deploy');
  recordRoutes(app, o, manage);
  functionLogRoutes(app, o, manage);
  changeRoutes(app, o, manage);
  catalogRoute(app, o);
  return app;
}

/** Deploy a version, list the functions, describe one. */
function recordRoutes(app: Hono<AppEnv>, o: FunctionRouteOptions, manage: Manage): void {
  app.post('/functions', manage, limit(o.maxBodyBytes), jsonBody(DeployRequestSchema), async (c) => {
    const body = c.req.valid('json');
    const spec = parseSpec(body.spec);
    const { model, hook, example } = body.artifacts;
    const version = await fnsOf(c, o).deploy(
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
    const warning = threadPlan(spec)?.warning;
    if (warning) reply.warnings = [warning];
    return c.json(reply, version.status === 'failed' ? 422 : version.status === 'pending' ? 202 : 201);
  });
  app.get('/functions', manage, async (c) => {
    const functions = fnsOf(c, o);
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
  app.get('/functions/:name', manage, async (c) => {
    const functions = fnsOf(c, o);
    const record = await functions.get(c.req.param('name'));
    await functions.refreshStats();
    const pools = functions.pools().filter((p) => p.function === record.name);
    const canary = functions.canaryOf(record);
    const threads = Object.fromEntries(
      record.versions.flatMap((v) => {
        const plan = threadPlan(v.spec);
        return plan ? [[String(v.version), plan]] : [];
      }),
    );
    const versions = record.versions.map(shownVersion);
    return c.json({ ...record, versions, ...(canary ? { canary } : {}), pools, threads } satisfies Reply<FunctionInfo>);
  });
}

/** Delete a function; change its traffic (a rollback is one) and its scaling. */
function changeRoutes(app: Hono<AppEnv>, o: FunctionRouteOptions, manage: Manage): void {
  app.delete('/functions/:name', manage, async (c) => {
    const name = c.req.param('name');
    const functions = fnsOf(c, o);
    await functions.get(name);
    await functions.delete(name);
    return c.json({ deleted: name } satisfies Reply<FunctionDeleted>);
  });
  app.put('/functions/:name/traffic', manage, jsonBody(TrafficRequestSchema), async (c) => {
    const { traffic } = c.req.valid('json');
    const record = await fnsOf(c, o).setTraffic(c.req.param('name'), traffic);
    return c.json({ name: record.name, traffic: record.traffic } satisfies Reply<TrafficResult>);
  });
  app.post('/functions/:name/rollback', manage, async (c) => {
    const { record, from } = await fnsOf(c, o).rollback(c.req.param('name'));
    return c.json({ name: record.name, traffic: record.traffic, from } satisfies Reply<RollbackResult>);
  });
  app.patch('/functions/:name/scaling', manage, jsonBody(ScalingRequestSchema), async (c) => {
    const { version, ...change } = c.req.valid('json');
    const name = c.req.param('name');
    return c.json({
      name,
      versions: await fnsOf(c, o).setScaling(name, change, version),
    } satisfies Reply<ScalingResult>);
  });
}
