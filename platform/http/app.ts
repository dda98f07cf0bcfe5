/**
 * The HTTP front door (hono): the management API (/api/v1, a sub-app per resource in ./api/),
 * KServe v2 beside infer (./kserve-routes.ts) and the console; function URLs (/fn) and KServe infer
 * are ./hot/hot-routes.ts, ahead of this app. Errors become `{"error", "code"}` in one place
 * (./errors.ts).
 */
import { Hono } from 'hono';

import type { ArtifactStore } from '../artifacts/index.js';
import type { ApiKey } from '../config/index.js';
import type { ManagedFunctions } from '../functions/serving.js';
import type { JobQueue } from '../jobs/index.js';
import type { Kserve } from '../kserve/index.js';
import type { Logger } from '../log/index.js';
import type { SecretStore } from '../secrets/index.js';
import { artifactRoutes } from './api/artifacts.js';
import { functionRoutes } from './api/functions.js';
import { jobRoutes } from './api/jobs.js';
import { nodeRoutes } from './api/nodes.js';
import { secretRoutes } from './api/secrets.js';
import { serveConsole } from './console.js';
import { kserveRoutes } from './kserve-routes.js';
import type { AppEnv } from './middleware.js';
import { errorResponse } from './middleware.js';

export interface AppOptions {
  service: ManagedFunctions;
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
      // A load's file: contents ride in its JSON, held in memory: bounded as a gRPC message is.
      maxLoadFileBytes: Math.min(o.maxArtifactBytes ?? 16 * 2 ** 30, o.maxBodyBytes),
      loopbackGuard: o.loopbackGuard,
    }),
  );

  // --- the management API (/api/v1), a sub-app per resource ------------------------------------------
  const api = new Hono<AppEnv>();
  api.route(
    '/',
    artifactRoutes({
      artifacts: o.artifacts,
      apiKeys: o.apiKeys,
      maxArtifactBytes: o.maxArtifactBytes ?? 16 * 2 ** 30,
      onUpload: o.onUpload,
    }),
  );
  api.route(
    '/',
    functionRoutes({
      functions: o.service,
      apiKeys: o.apiKeys,
      maxBodyBytes: o.maxBodyBytes,
      serveJobs: (name) => o.jobs.serve(name),
      ready: o.ready,
    }),
  );
  api.route('/', secretRoutes({ secrets: o.secrets, apiKeys: o.apiKeys }));
  api.route('/', nodeRoutes({ functions: o.service, apiKeys: o.apiKeys }));
  api.route('/', jobRoutes({ jobs: o.jobs, apiKeys: o.apiKeys }));
  app.route('/api/v1', api);

  // The console (a static page that calls this API).
  serveConsole(app);
  // Function URLs and KServe infer are served by ./hot/hot-routes.ts, ahead of this app.

  return app;
}
