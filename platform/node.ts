/**
 * The composition root of a Hearth node: configuration → registry, artifact store, function
 * service, HTTP server. The ports it listens on (0 picks a free one) are logged as one JSON line.
 */
import { randomUUID } from 'node:crypto';
import { chmod, mkdir } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

import { getRequestListener } from '@hono/node-server';

import { devices, gpuMetrics, groupOf, RunnerHost, setIntraOpThreads } from '../runtime/index.js';
import type { SandboxReport } from '../runtime/index.js';
import { createArtifactStore } from './artifacts/index.js';
import { Cluster } from './cluster/index.js';
import type { Config } from './config.js';
import { FunctionLogs, FunctionService } from './functions/index.js';
import { bindGrpc, createGrpcServer } from './grpc/index.js';
import { Kserve, SharedMemoryRegions } from './kserve/index.js';
import { findKey } from './caller/index.js';
import { Readiness } from './readiness.js';
import { browserRefusal, createApp, createHotRoutes, frontDoor, InFlight, toHttpResponse } from './http/index.js';
import { createLogger } from './log.js';
import type { Logger } from './log.js';
import { grpcServerCredentials, reloadOnChange, tlsServerOptions } from './tls.js';
import { checkNoEviction, createJobQueue } from './jobs/index.js';
import type { JobQueue } from './jobs/index.js';
import { Metrics } from './metrics/index.js';
import { createRegistry } from './registry/index.js';
import { createSecretStore } from './secrets/index.js';

export const VERSION = '0.1.0';

export interface HearthNode {
  config: Config;
  service: FunctionService;
  jobs: JobQueue;
  httpUrl: string;
  /** host:port of the gRPC service. */
  grpcAddress: string;
  metricsUrl: string;
  /** Readiness 503, in-flight requests finish, then everything closes. */
  drain(): Promise<void>;
  close(): Promise<void>;
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    if (server.listening) return resolve((server.address() as AddressInfo).port);
    server.once('listening', () => resolve((server.address() as AddressInfo).port));
    server.once('error', reject);
  });
}

/**
 * The data dir is the node's alone (0700, whatever it was made with): records, secrets and the
 * sealing key in it are 0600 besides; artifacts stay readable (0644) because runners of other uids
 * read them through the hard links in their own folders — the only path to them, as no one else
 * may pass through the data dir.
 */
async function secureDataDir(dir: string, log: Logger): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700).catch((error: NodeJS.ErrnoException) => {
    // A volume made by someone else (a Kubernetes emptyDir is root's, 0777): its files are still
    // the node's own, 0600, and runners read nothing outside their folders (the jail).
    if (error.code !== 'EPERM') throw error;
    log.warn({ dataDir: dir }, 'the data dir belongs to another user: it stays as it is (not 0700)');
  });
}

/** The longest close() waits for the responses of requests in flight. */
const CLOSE_WAIT_MS = 10_000;

/** The longest a starting node waits for its spare runner before it reports ready. */
const SPARE_WAIT_MS = 30_000;

export async function startNode(config: Config): Promise<HearthNode> {
  const root = createLogger({ level: config.logLevel });
  // The node's own lines (start, drain, TLS, cluster sweeps) and each component's.
  const log = root.child({ component: 'node' });
  const logOf = (component: string) => root.child({ component });
  if (config.redisUrl) await checkNoEviction(config.redisUrl);
  await secureDataDir(config.dataDir, log);
  setIntraOpThreads(config.intraOpThreads);
  const registry = createRegistry(config);
  const artifacts = createArtifactStore(config, (sha256, actual) =>
    logOf('artifacts').error({ sha256, actual }, 'artifact refused: its bytes do not match its hash'),
  );
  let metrics: Metrics | undefined;
  const nodeId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const cluster = config.redisUrl
    ? new Cluster({ redisUrl: config.redisUrl, prefix: config.redisPrefix, nodeId })
    : undefined;
  const functionLogs = new FunctionLogs();
  const runnerLog = logOf('runner');
  const runners =
    config.isolation === 'process'
      ? new RunnerHost({
          // A root node runs user code as other users; a node that is not root gives its runners
          // uids of their own inside their user namespaces (runtime/runner/jail.ts).
          users: {
            firstUid: config.runnerUidBase,
            gid: process.getuid?.() === 0 ? await groupOf(config.runnerUser) : config.runnerUidBase,
          },
          sandbox: config.sandbox,
          intraOpThreads: config.intraOpThreads,
          arenaBytes: config.arenaMb * 2 ** 20,
          onArenaFailed: (why) =>
            runnerLog.warn({ why }, 'runners get no shared-memory arena; tensors go on their sockets'),
          onLine: (line, runner) => {
            runnerLog.info({ function: runner.label, runner: runner.pid, line }, 'runner output');
            if (runner.label) functionLogs.addRunnerLine(runner.label, line);
          },
        })
      : undefined;
  // The node is ready once its spare runner is up, so its first cold start does not wait for one —
  // but never later than SPARE_WAIT_MS: a spare that neither starts nor exits must not hold the node.
  const spareUp = runners?.warm();
  const secrets = createSecretStore(config);
  const service = new FunctionService({
    runners,
    registry,
    secrets: secrets.store,
    artifacts,
    dataDir: config.dataDir,
    log: logOf('functions'),
    autoscaleTickMs: config.autoscaleTickMs,
    cluster,
    queuedElsewhere: (n, v) => (cluster?.queued(n, v) ?? 0) + jobs.waiting(n),
    onColdStart: (n, v, phases) => metrics?.observeColdStart(n, v, phases),
    logs: functionLogs,
  });
  metrics = new Metrics(
    () => service.pools(),
    () => service.refreshStats(),
    gpuMetrics,
  );
  const jobs = createJobQueue(
    config,
    nodeId,
    // A job's try has a deadline: a hook or model that never answers fails it instead of holding it.
    (name, version, request) =>
      service.invoke(name, version, request, { deadline: performance.now() + config.jobs.timeoutMs }),
    logOf('jobs'),
  );
  // Cluster mode: this node takes any function's jobs, not only those it accepted, and learns of
  // functions deployed through other nodes within a few seconds.
  // A GPU node also adopts the versions that wait for a GPU (deployed through a node without one).
  const serveAll = (): void => {
    void registry.list().then(
      (fs) => {
        for (const f of fs) jobs.serve(f.name);
        void service
          .resumeCanaries(fs)
          .catch((error: unknown) => log.warn({ reason: (error as Error).message }, 'taking over canaries failed'));
      },
      () => undefined,
    );
    void service
      .refreshScaling()
      .catch((error: unknown) => log.warn({ reason: (error as Error).message }, 'refreshing scaling failed'));
    void service
      .adoptWaiting()
      .catch((error: unknown) => log.warn({ reason: (error as Error).message }, 'adopting waiting versions failed'));
  };
  const serving = jobs.kind === 'bullmq' ? setInterval(serveAll, 5000).unref() : undefined;
  if (serving) setTimeout(serveAll, 100).unref();
  const tlsOptions = config.tls ? tlsServerOptions(config.tls) : undefined;
  const metricsServer = await metrics.listen(
    config.host,
    config.metricsPort,
    (req) => {
      const browser = config.loopbackGuard ? browserRefusal(req.headers) : undefined;
      if (browser) return { status: 403, error: browser, code: 'PERMISSION_DENIED' };
      if (config.metricsKey === undefined) return undefined;
      const bearer = req.headers.authorization;
      const given = bearer?.startsWith('Bearer ') ? bearer.slice(7) : '';
      return findKey([{ key: config.metricsKey, scope: 'invoke' }], given)
        ? undefined
        : {
            status: 401,
            error: 'send the metrics key: Authorization: Bearer <HEARTH_METRICS_KEY>',
            code: 'UNAUTHENTICATED',
          };
    },
    tlsOptions,
  );
  const readiness = new Readiness();
  const ready = (): boolean => readiness.ready();
  const admit = (options: { deadline?: number; signal?: AbortSignal }) => readiness.admit(options);
  const inflight = new InFlight();
  // The KServe protocol's core, which HTTP and gRPC speak.
  const kserve = new Kserve({
    functions: service,
    artifacts,
    ready,
    admit,
    version: VERSION,
    sharedMemory: new SharedMemoryRegions(config.systemSharedMemory, config.shmPrefix),
    cudaAvailable: () => devices().cudaAvailable,
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
    admit,
    inflight,
    kserve,
    log: logOf('http'),
  };
  const app = createApp({
    ...front,
    artifacts,
    secrets: secrets.store,
    onUpload: (bytes) => metrics?.observeUpload(bytes),
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
  const server: Server = tlsOptions ? createHttpsServer(tlsOptions, handle) : createServer(handle);
  // Renewed certificate files are picked up without a restart.
  const stopReload = config.tls
    ? reloadOnChange(config.tls, [server as HttpsServer, metricsServer.server as HttpsServer], (error) =>
        log.warn({ reason: error.message }, 'renewed TLS files could not be used; the previous certificate stays'),
      )
    : undefined;
  // Idle kept-alive connections stay open 65 s (as load balancers expect: longer than their own
  // idle timeout, so the node never closes a socket a client is about to reuse).
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.listen(config.httpPort, config.host);
  const httpPort = await listen(server);
  const grpcServer = createGrpcServer({
    service,
    kserve,
    apiKeys: config.apiKeys,
    maxMessageBytes: config.maxBodyBytes,
    log: logOf('grpc'),
  });
  const grpcPort = await bindGrpc(grpcServer, config.host, config.grpcPort, grpcServerCredentials(config.tls));
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const scheme = config.tls ? 'https' : 'http';
  const httpUrl = `${scheme}://${host}:${httpPort}`;
  cluster?.start(() => service.pools(), httpUrl);
  // Readiness waits for the functions that keep instances warm (scaling.minInstances ≥ 1).
  const minimum = service.warmMinimum().catch((error: unknown) => {
    log.warn({ reason: (error as Error).message }, 'could not list the functions to warm at start');
    return { warm: [], failed: [] };
  });
  if (spareUp) {
    const timedOut = await Promise.race([spareUp.then(() => false), sleep(SPARE_WAIT_MS, true, { ref: false })]);
    if (timedOut)
      log.warn(
        { waitedMs: SPARE_WAIT_MS },
        'no spare runner yet; ready without one (the first cold start starts its own)',
      );
  }
  if (runners && config.sandbox !== 'off') {
    // Which layers of the kernel's jail the runners have (the spare's report), or why not.
    const sandbox = runners.sandbox;
    if (!sandbox && config.sandbox === 'strict')
      throw new Error(
        `HEARTH_SANDBOX=strict: no runner could start in its jail: ${runners.spareError ?? 'the spare runner did not start in time'}`,
      );
    const report = (s: SandboxReport) => {
      if (s.notes.length) log.warn({ sandbox: s.summary, missing: s.notes }, 'runners are jailed without every layer');
      else log.info({ sandbox: s.summary }, 'runners are jailed');
    };
    // A spare late on a loaded machine: the first runner to start says it.
    if (sandbox) report(sandbox);
    else void runners.reported.then(report);
  }
  const warmed = await minimum;
  readiness.serve();
  // Canaries an embedded node watched before it stopped are watched again.
  void service
    .resumeCanaries()
    .catch((error: unknown) => log.warn({ reason: (error as Error).message }, 'resuming canaries failed'));
  log.info(
    {
      node: nodeId,
      warmAtStart: warmed.warm,
      ...(warmed.failed.length ? { failedAtStart: warmed.failed } : {}),
      http: httpPort,
      grpc: grpcPort,
      metrics: metricsServer.port,
      intraOpThreads: config.intraOpThreads,
      isolation: config.isolation,
      host: config.host,
      tls: config.tls ? (config.tls.clientCaFile ? 'mutual' : 'on') : 'off',
      registry: registry.kind,
      artifacts: artifacts.kind,
      dataDir: config.dataDir,
    },
    'hearth listening',
  );

  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    readiness.stop();
    stopReload?.();
    clearInterval(serving);
    // Jobs still running when the wait ends fail as their pools stop below.
    await Promise.race([jobs.close(), sleep(CLOSE_WAIT_MS, undefined, { ref: false })]);
    await cluster?.close();
    // New connections are refused and idle ones closed at once; requests in flight get their
    // responses (for at most CLOSE_WAIT_MS); then what is still open goes too — a kept-alive
    // socket whose client sent part of a request would otherwise hold the server for its 65 s.
    const httpClosed = new Promise<void>((resolve) => server.close(() => resolve()));
    await Promise.race([inflight.idle(), sleep(CLOSE_WAIT_MS, undefined, { ref: false })]);
    server.closeAllConnections();
    await httpClosed;
    await new Promise<void>((resolve) => grpcServer.tryShutdown(() => resolve()));
    await new Promise<void>((resolve) => metricsServer.server.close(() => resolve()));
    await service.close();
    await secrets.close();
    kserve.sharedMemory.close();
  };
  return {
    config,
    service,
    jobs,
    httpUrl,
    grpcAddress: `${host}:${grpcPort}`,
    metricsUrl: `${scheme}://${host}:${metricsServer.port}/metrics`,
    async drain() {
      readiness.stop();
      log.info({ inflight: inflight.count }, 'draining');
      // Running jobs and calls forwarded here finish while their pools still serve (or, killed, go
      // back to the queue) — until the drain's deadline: then what is left fails as the node closes.
      const end = performance.now() + config.drainTimeoutMs;
      let late = false;
      const bounded = async (step: Promise<unknown> | undefined): Promise<void> => {
        const left = end - performance.now();
        if (late || left <= 0) {
          late = true;
          return;
        }
        late = (await Promise.race([step?.then(() => false), sleep(left, true, { ref: false })])) === true;
      };
      await bounded(jobs.close());
      await bounded(cluster?.close());
      await bounded(service.drain());
      // Responses of requests the pools have finished may still be on their way out.
      await bounded(inflight.idle());
      if (late) {
        log.warn(
          { inflight: inflight.count, waitedMs: config.drainTimeoutMs },
          'the drain ran past HEARTH_DRAIN_TIMEOUT_MS: what is left fails as the node closes',
        );
        // Runners end at once: what they still hold is answered 503 rather than cut off.
        await runners?.close();
      }
      await close();
      log.info({}, 'drained');
    },
    close,
  };
}
