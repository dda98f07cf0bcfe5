/**
 * The composition root of a Hearth node: configuration → stores, services, servers, then ready. The
 * ports it listens on (0 picks a free one) are logged as one JSON line, `hearth listening`.
 */

import { usableCores } from '../../runtime/engine/index.js';
import type { Config } from '../config/index.js';
import type { FunctionService } from '../functions/index.js';
import type { JobQueue } from '../jobs/index.js';
import type { Logger } from '../log/index.js';
import { createLogger, LogSwitches } from '../log/index.js';
import { createFront } from './front.js';
import { closer, drainer } from './lifecycle.js';
import { Readiness } from './readiness.js';
import { listenGrpc, listenHttp, listenMetrics } from './servers.js';
import { createServices } from './services.js';
import type { Stores } from './stores.js';
import { openStores } from './stores.js';
import { resumeCanaries, startClusterSweep } from './sweeps.js';
import { tlsServerOptions } from './tls.js';
import type { WarmedAtStart } from './warm-up.js';
import { warmUp } from './warm-up.js';

export const VERSION = '0.1.0';

export interface HearthNode {
  config: Config;
  service: FunctionService;
  jobs: JobQueue;
  httpUrl: string;
  /** host:port of the gRPC service. */
  grpcAddress: string;
  metricsUrl: string;
  /** Settles once its spare runner is up (or could not start); at once with no runners. */
  spareUp: Promise<void>;
  /** Readiness 503, in-flight requests finish, then everything closes. */
  drain(): Promise<void>;
  close(): Promise<void>;
}

/** The `hearth listening` line: the node, its ports, what it warmed and how it is set up. */
function listening(
  config: Config,
  stores: Stores,
  warmed: WarmedAtStart,
  ports: { http: number; grpc: number; metrics: number },
): object {
  return {
    node: stores.nodeId,
    warmAtStart: warmed.warm,
    ...(warmed.failed.length ? { failedAtStart: warmed.failed } : {}),
    ...ports,
    intraOpThreads: config.intraOpThreads,
    // The cores it may use: its CPUs, or fewer where its cgroup sets a CPU quota (a container's limit).
    cores: usableCores(),
    isolation: config.isolation,
    host: config.host,
    tls: config.tls ? (config.tls.clientCaFile ? 'mutual' : 'on') : 'off',
    registry: stores.registry.kind,
    artifacts: stores.artifacts.kind,
    dataDir: config.dataDir,
  };
}

/** A warning where the intra-op threads asked for are more than the cores the node may use. */
function warnThreads(config: Config, log: Logger): void {
  const { cores } = usableCores();
  if (config.intraOpThreads > cores)
    log.warn(
      { intraOpThreads: config.intraOpThreads, cores },
      `HEARTH_INTRA_OP_THREADS=${config.intraOpThreads} is more than the ${cores} cores this node may use: a forward's threads would wait for each other`,
    );
}

export async function startNode(config: Config): Promise<HearthNode> {
  // When each phase of the start ended, in seconds of the process's life (its modules are loaded now).
  const phases: Record<string, number> = { modules: process.uptime() };
  const logSwitches = new LogSwitches(config.logLevel);
  const root = createLogger({ level: config.logLevel, switches: logSwitches });
  // The node's own lines (start, drain, TLS, cluster sweeps) and each component's.
  const log = root.child({ component: 'node' });
  const logOf = (component: string) => root.child({ component });
  const stores = await openStores(config, log, logOf);
  phases.stores = process.uptime();
  const { registry, artifacts, cluster, runners } = stores;
  const { service, metrics, jobs } = createServices(config, stores, logOf);
  const serving = startClusterSweep(registry, jobs, service, log);
  const tlsOptions = config.tls ? tlsServerOptions(config.tls) : undefined;
  const metricsServer = await listenMetrics(config, metrics, tlsOptions);
  const readiness = new Readiness();
  const { kserve, inflight, handle } = createFront(config, {
    service,
    jobs,
    artifacts,
    secrets: stores.secrets.store,
    metrics,
    readiness,
    version: VERSION,
    log: logOf('http'),
    logSwitches,
    traceLog: logOf('trace'),
  });
  const http = await listenHttp(config, handle, tlsOptions, metricsServer.server, log);
  phases.port_live = process.uptime();
  const grpc = await listenGrpc(config, service, kserve, logOf('grpc'));
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const scheme = config.tls ? 'https' : 'http';
  const httpUrl = `${scheme}://${host}:${http.port}`;
  cluster?.start(
    () => service.pools(),
    httpUrl,
    (node) => service.routed.briefs(node),
  );
  const warmed = await warmUp(config, service, runners, stores.spareUp, log);
  readiness.serve();
  phases.ready = process.uptime();
  metrics.observeNodeStart(phases);
  warnThreads(config, log);
  resumeCanaries(service, log);
  log.info(
    {
      ...listening(config, stores, warmed, { http: http.port, grpc: grpc.port, metrics: metricsServer.port }),
      startedIn: Object.fromEntries(Object.entries(phases).map(([k, s]) => [k, Math.round(s * 1000)])),
    },
    'hearth listening',
  );
  const running = {
    readiness,
    stopReload: http.stopReload,
    serving,
    jobs,
    cluster,
    server: http.server,
    inflight,
    grpcServer: grpc.server,
    metricsServer: metricsServer.server,
    service,
    secrets: stores.secrets,
    kserve,
    runners,
  };
  const close = closer(running);
  return {
    config,
    service,
    jobs,
    httpUrl,
    grpcAddress: `${host}:${grpc.port}`,
    metricsUrl: `${scheme}://${host}:${metricsServer.port}/metrics`,
    spareUp: stores.spareUp ?? Promise.resolve(),
    drain: drainer(running, config.drainTimeoutMs, close, log),
    close,
  };
}
