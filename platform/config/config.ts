/** The node's configuration as the node reads it (loadConfig makes it from the environment). */
import type { JobSettings } from '../jobs/index.js';
import type { ApiKey } from './api-keys.js';

export interface TlsFiles {
  certFile: string;
  keyFile: string;
  /** Client certificates are required and checked against this CA (mutual TLS). */
  clientCaFile?: string;
  /** How often the files are looked at for a renewal (default 2 s). */
  reloadMs?: number;
}

export interface Config {
  httpPort: number;
  grpcPort: number;
  metricsPort: number;
  host: string;
  dataDir: string;
  /**
   * Where Triton's trace extension writes its traces (`trace.json` and its indexed files): the
   * operator's folder, never a caller's (HEARTH_TRACE_DIR; default `<data dir>/traces`). Absent:
   * tracing cannot be turned on.
   */
  traceDir?: string;
  redisUrl?: string;
  redisPrefix: string;
  s3?: { bucket: string; endpoint?: string; region: string; prefix: string };
  cacheMaxBytes: number;
  maxBodyBytes: number;
  /** Largest JSON a KServe request may carry (its whole body, or a binary request's JSON header). */
  maxJsonBytes: number;
  apiKeys: ApiKey[];
  /**
   * No API key is configured and the node listens on loopback only: requests must name a loopback
   * host and must not come from another site's page (DNS rebinding, cross-site requests).
   */
  loopbackGuard: boolean;
  /** TLS on every port (HEARTH_TLS_CERT, HEARTH_TLS_KEY), mutual with HEARTH_TLS_CLIENT_CA. */
  tls?: TlsFiles;
  /** Bearer key the metrics port asks for (Prometheus' `authorization.credentials`); none: open. */
  metricsKey?: string;
  logLevel: string;
  /**
   * LibTorch intra-op threads for forwards on CPU. Default: one core fewer than the machine has
   * (at least 1), so the event loop and hook threads keep a core: measured on 2 cores, a node
   * serving the MLP over HTTP answered 1,435 requests/s with 1 intra-op thread and 1,095 with 2,
   * whose OpenMP team stalled whenever the event loop took one of its cores.
   */
  intraOpThreads: number;
  /**
   * The longest a drain (SIGTERM) waits for jobs, pools and responses in flight; what is left then
   * fails (its runners stop), and the node closes.
   */
  drainTimeoutMs: number;
  /** How often the autoscaler looks at the pools. */
  autoscaleTickMs: number;
  /** Signs webhooks (Standard Webhooks); without it, requests that ask for a webhook are refused. */
  webhookSecret?: string;
  /** Tries, backoff, record TTL, lock, concurrency, a try's deadline, where webhooks may go. */
  jobs: JobSettings;
  /**
   * Triton's system shared memory: a caller names a POSIX segment on this host for the node to map.
   * On by default only on a loopback bind (the callers are on this host); a node reachable from
   * elsewhere maps no caller-named segment unless HEARTH_SYSTEM_SHARED_MEMORY=on.
   */
  systemSharedMemory: boolean;
  /** Registered segments' keys must start with this (HEARTH_SHM_PREFIX; default "/", any). */
  shmPrefix: string;
  /**
   * `process`: each function version runs in its own runner process (no secrets, its own files,
   * Node's permission model, another user when the node is root), supervised and restarted.
   * `none`: pools run in the node (Triton's model: for trusted, single-tenant deployments).
   */
  isolation: 'process' | 'none';
  /**
   * Seals secrets (HEARTH_SECRETS_KEY or _FILE). Unset: the embedded default makes one under the
   * data dir; with Redis (a cluster) secrets need it set, the same on every node.
   */
  secretsKey?: Buffer;
  /**
   * The kernel's jail around each runner (namespaces, uid, Landlock, seccomp, cgroups): `auto` takes
   * every layer the host offers and logs which; `strict` refuses to start without all of them.
   */
  sandbox: 'auto' | 'strict' | 'off';
  /** Jailed runners forked from the runner template (LibTorch loaded once per node), or each exec'd. */
  runnerTemplate: boolean;
  /** Runners' group is this user's (when the node runs as root). */
  runnerUser: string;
  /** When the node runs as root, each runner runs as a uid of its own from here up (65 536 of them). */
  runnerUidBase: number;
  /**
   * MiB of shared memory between the node and each runner, for request and response tensors and
   * bodies (runtime/runner/wire/arena.ts); virtual: pages exist once written. 0: everything on the socket.
   */
  arenaMb: number;
  /**
   * MiB the memory limits of the node's runners may add up to (HEARTH_NODE_MEMORY_MB less
   * HEARTH_NODE_RESERVED_MB): past it a runner's start is refused, and a spec asking more is
   * refused at deploy.
   */
  runnerMemoryBudgetMb: number;
}
