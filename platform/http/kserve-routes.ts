/**
 * KServe v2 over HTTP, beside infer (./hot/kserve-infer.ts): server and model metadata, readiness, model
 * configuration and statistics, system and CUDA shared memory, Triton's repository extension, and
 * its trace and logging extensions (./settings-routes.ts) — each route a codec over the protocol's
 * core (../kserve).
 */

import type { Context } from 'hono';
import { Hono } from 'hono';

import { InvalidInputError } from '../../sdk/errors.js';
import type { ApiKey } from '../config/index.js';
import type { Kserve } from '../kserve/index.js';
import { cudaSharedMemoryUnsupported, parseJson, readLoadParameters } from '../kserve/index.js';
import { refuseFormBody } from './json-body.js';
import type { AppEnv } from './middleware.js';
import { auth, callerOf, deployerOf, limit, owner } from './middleware.js';
import { settingsRoutes } from './settings-routes.js';

export interface KserveRouteOptions {
  kserve: Kserve;
  apiKeys: ApiKey[];
  /** The most a load's `file:` contents may hold together, decoded (HEARTH_MAX_BODY_BYTES). */
  maxLoadFileBytes: number;
  loopbackGuard?: boolean;
}

/** A load's body: its files base64 (4 bytes for 3) beside the configuration; refused past that unread. */
const loadBodyBytes = (maxFileBytes: number) => Math.ceil((maxFileBytes * 4) / 3) + 2 ** 20;

export function kserveRoutes(o: KserveRouteOptions): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const { kserve } = o;
  const invoke = auth(o.apiKeys, 'invoke');
  // Triton's repository API makes and unloads functions: a deploy key's, on its own tenant's.
  const manage = auth(o.apiKeys, 'deploy');
  const name = (c: Context) => c.req.param('name')!;
  // The protocol as the caller may use it: its tenant's models only.
  const as = (c: Context<AppEnv>) => kserve.as(callerOf(c));
  const version = (c: Context) => c.req.param('version');

  // --- health and server metadata (health needs no key) ------------------------------------------
  app.get('/v2/health/live', (c) => c.json({ live: true }));
  app.get('/v2/health/ready', (c) => (kserve.ready() ? c.json({ ready: true }) : c.json({ ready: false }, 503)));
  app.get('/v2', invoke, (c) => c.json(kserve.serverMetadata()));

  // --- models ----------------------------------------------------------------------------------------
  const metadata = async (c: Context<AppEnv>) => c.json(await as(c).modelMetadata(name(c), version(c)));
  const modelReady = async (c: Context<AppEnv>) =>
    (await as(c).modelReady(name(c), version(c)))
      ? c.json({ name: name(c), ready: true })
      : c.json({ name: name(c), ready: false }, 503);
  const config = async (c: Context<AppEnv>) => c.json(await as(c).modelConfig(name(c), version(c)));
  const stats = async (c: Context<AppEnv>) => c.json(await as(c).statistics(c.req.param('name'), version(c)));
  // Before /v2/models/:name, which would take "stats" for a model's name.
  app.get('/v2/models/stats', invoke, stats);
  app.get('/v2/models/:name/stats', invoke, stats);
  app.get('/v2/models/:name/versions/:version/stats', invoke, stats);
  app.get('/v2/models/:name/config', invoke, config);
  app.get('/v2/models/:name/versions/:version/config', invoke, config);
  app.get('/v2/models/:name', invoke, metadata);
  app.get('/v2/models/:name/versions/:version', invoke, metadata);
  app.get('/v2/models/:name/ready', invoke, modelReady);
  app.get('/v2/models/:name/versions/:version/ready', invoke, modelReady);

  // --- system shared memory (Triton's extension), each caller's own regions ------------------------------
  const shm = kserve.sharedMemory;
  const shmStatus = (c: Context<AppEnv>) => c.json(shm.status(owner(c), c.req.param('region')));
  app.get('/v2/systemsharedmemory/status', invoke, shmStatus);
  app.get('/v2/systemsharedmemory/region/:region/status', invoke, shmStatus);
  // A region maps a segment of the node's host: its own scope, beyond invoke.
  app.post('/v2/systemsharedmemory/region/:region/register', auth(o.apiKeys, 'shm'), async (c) => {
    refuseFormBody(o.loopbackGuard === true, (h) => c.req.header(h));
    const body = parseJson(await c.req.text(), 'the register request');
    if (typeof body !== 'object' || body === null)
      throw new InvalidInputError('send {"key": "/name", "offset": 0, "byte_size": N}');
    shm.register(owner(c), c.req.param('region'), body as Record<string, unknown>, deployerOf(c));
    return c.json({});
  });
  const shmUnregister = (c: Context<AppEnv>) => {
    shm.unregister(owner(c), c.req.param('region'));
    return c.json({});
  };
  app.post('/v2/systemsharedmemory/unregister', invoke, shmUnregister);
  app.post('/v2/systemsharedmemory/region/:region/unregister', invoke, shmUnregister);

  // --- CUDA shared memory: none on this node; status lists no regions, register says why ---------------
  app.get('/v2/cudasharedmemory/status', invoke, (c) => c.json([]));
  app.get('/v2/cudasharedmemory/region/:region/status', invoke, (c) => c.json([]));
  app.post('/v2/cudasharedmemory/region/:region/register', invoke, () => cudaSharedMemoryUnsupported());
  app.post('/v2/cudasharedmemory/unregister', invoke, (c) => c.json({}));
  app.post('/v2/cudasharedmemory/region/:region/unregister', invoke, (c) => c.json({}));

  // --- Triton's repository extension ------------------------------------------------------------------
  app.post('/v2/repository/index', manage, async (c) => c.json(await as(c).repositoryIndex()));
  app.post('/v2/repository/models/:name/load', manage, limit(loadBodyBytes(o.maxLoadFileBytes)), async (c) => {
    refuseFormBody(o.loopbackGuard === true, (h) => c.req.header(h));
    const text = await c.req.text();
    const body = text ? parseJson(text, `failed to load '${name(c)}', the load request`) : {};
    const parameters = (body as { parameters?: unknown } | null)?.parameters;
    await as(c).load(name(c), readLoadParameters(parameters, o.maxLoadFileBytes));
    return c.json({});
  });
  app.post('/v2/repository/models/:name/unload', manage, async (c) => {
    await as(c).unload(name(c));
    return c.json({});
  });
  return app.route('/', settingsRoutes(o));
}
