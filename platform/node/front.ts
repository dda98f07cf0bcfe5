/**
 * The node's front: the KServe protocol's core (which HTTP and gRPC speak) and the one handler every
 * HTTP request goes through — the front door first, then the hot routes (function URLs, KServe
 * infer), then the hono app for the rest.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import { getRequestListener } from '@hono/node-server';

import { devices } from '../../runtime/index.js';
import type { ArtifactStore } from '../artifacts/index.js';
import type { Config } from '../config/index.js';
import { DEFAULT_TENANT } from '../config/index.js';
import type { FunctionService } from '../functions/index.js';
import { createApp, createHotRoutes, frontDoor, InFlight, toHttpResponse } from '../http/index.js';
import type { JobQueue } from '../jobs/index.js';
import { Kserve, SharedMemoryRegions, TRACE_DEFAULTS, TraceFile, Tracer } from '../kserve/index.js';
import type { Logger, LogSwitches } from '../log/index.js';
import type { Metrics } from '../metrics/index.js';
import type { SecretStore } from '../secrets/index.js';
import type { Readiness } from './readiness.js';

export interface FrontParts {
  service: FunctionService;
  jobs: JobQueue;
  artifacts: ArtifactStore;
  secrets: SecretStore;
  metrics: Metrics;
  readiness: Readiness;
  /** The node's version, as the KServe server metadata says it. */
  version: string;
  log: Logger;
  /** The node logger's switches (Triton's logging extension). */
  logSwitches?: LogSwitches;
  /** Where the trace files' own failures are logged. */
  traceLog?: Logger;
}

export interface Front {
  kserve: Kserve;
  /** Requests in flight, which a drain waits for. */
  inflight: InFlight;
  handle: (req: IncomingMessage, res: ServerResponse) => void;
}

export function createFront(config: Config, parts: FrontParts): Front {
  const { service, jobs, artifacts, readiness } = parts;
  const ready = (): boolean => readiness.ready();
  const admit = (options: { deadline?: number; signal?: AbortSignal }) => readiness.admit(options);
  const inflight = new InFlight();
  // Triton's trace extension writes to the operator's folder only (Config.traceDir).
  const tracer = new Tracer(
    config.traceDir === undefined ? undefined : new TraceFile(config.traceDir, { log: parts.traceLog }),
    TRACE_DEFAULTS,
    parts.traceLog,
  );
  // A model's trace settings are its function's: they go when it is deleted (here, or another node's sweep sees it).
  service.deletions.listen((name, createdAt) => tracer.forget(name, createdAt));
  // The KServe protocol's core, which HTTP and gRPC speak.
  const kserve = new Kserve({
    functions: service,
    artifacts,
    ready,
    admit,
    version: parts.version,
    sharedMemory: new SharedMemoryRegions(config.systemSharedMemory, config.shmPrefix, tenantsOf(config.apiKeys)),
    cudaAvailable: () => devices().cudaAvailable,
    tracer,
    ...(parts.logSwitches ? { logSwitches: parts.logSwitches } : {}),
  });
  // What the hono app and the hot routes (function URLs, KServe infer) share.
  const front = {
    service,
    jobs,
    apiKeys: config.apiKeys,
    maxBodyBytes: config.maxBodyBytes,
    maxJsonBytes: config.maxJsonBytes,
    loopbackGuard: config.loopbackGuard,
    ready,
    inflight,
    kserve,
    log: parts.log,
  };
  const app = createApp({
    ...front,
    artifacts,
    secrets: parts.secrets,
    onUpload: (bytes) => parts.metrics.observeUpload(bytes),
  });
  const hot = createHotRoutes(front);
  const rest = getRequestListener(app.fetch);
  const door = frontDoor({ loopbackGuard: config.loopbackGuard });
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const refused = door.admit(req, res);
    if (refused) {
      const { status, body } = toHttpResponse(refused, { requestId: req.headers['x-request-id'] as string });
      res.writeHead(status, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify(body));
      return;
    }
    if (!hot(req, res)) void rest(req, res);
  };
  return { kserve, inflight, handle };
}

/** The tenants the keys name, the default one left out. */
function tenantsOf(keys: Config['apiKeys']): string[] {
  return [...new Set(keys.map((k) => k.tenant))].filter((t) => t !== DEFAULT_TENANT);
}
