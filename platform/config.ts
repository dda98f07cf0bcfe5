/**
 * The node's configuration, from environment variables, validated at start: a bad value stops the
 * node with a message that names the variable.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

import { z } from 'zod';

import { DEFAULT_ARENA_MB } from '../runtime/index.js';
import { InvalidInputError } from '../sdk/errors.js';
import type { WebhookPolicy } from './jobs/webhook-policy.js';
import { parseAllowHosts } from './jobs/webhook-policy.js';
import type { TlsFiles } from './tls.js';

const port = (name: string, fallback: number) =>
  z.coerce
    .number({ message: `${name} must be a port number` })
    .int(`${name} must be an integer`)
    .min(0, `${name} must be 0-65535 (0 picks a free port)`)
    .max(65535, `${name} must be 0-65535 (0 picks a free port)`)
    .default(fallback);

const ApiKey = z.object({ key: z.string().min(8), scope: z.enum(['invoke', 'shm', 'admin']) });
export type ApiKey = z.infer<typeof ApiKey>;

/**
 * `key1:admin,key2:invoke,key3:shm` (a key without a scope is an admin key; `shm` is an invoke key
 * that may also register system shared memory); in a keys file, entries are also
 * separated by new lines and `#` starts a comment.
 */
function parseApiKeys(value: string | undefined, from = 'HEARTH_API_KEYS'): ApiKey[] {
  if (!value) return [];
  return value
    .replace(/#.*$/gm, '')
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      const at = entry.lastIndexOf(':');
      const [key, scope] = at > 0 ? [entry.slice(0, at), entry.slice(at + 1)] : [entry, 'admin'];
      const parsed = ApiKey.safeParse({ key, scope });
      if (!parsed.success)
        throw new InvalidInputError(
          `${from}: each entry must be KEY:invoke, KEY:shm or KEY:admin with a key of at least 8 characters (got "${entry.replace(/^(.{3}).*/, '$1…')}")`,
        );
      return parsed.data;
    });
}

/** An integer from the environment (`name` must be `what`, says the error otherwise). */
const integer = (name: string, what: string) => z.coerce.number({ message: `${name} must be ${what}` }).int();

export const ConfigSchema = z.object({
  HEARTH_HTTP_PORT: port('HEARTH_HTTP_PORT', 8000),
  HEARTH_GRPC_PORT: port('HEARTH_GRPC_PORT', 8001),
  HEARTH_METRICS_PORT: port('HEARTH_METRICS_PORT', 8002),
  HEARTH_HOST: z.string().min(1, 'HEARTH_HOST must not be empty').default('127.0.0.1'),
  HEARTH_DATA_DIR: z.string().min(1, 'HEARTH_DATA_DIR must not be empty').default('./.hearth'),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'REDIS_URL must start with redis:// or rediss://')
    .optional(),
  HEARTH_REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:_-]+$/, 'HEARTH_REDIS_PREFIX may hold letters, digits, ":", "_" and "-"')
    .default('hearth:'),
  HEARTH_S3_BUCKET: z
    .string()
    .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'HEARTH_S3_BUCKET must be a valid S3 bucket name')
    .optional(),
  HEARTH_S3_ENDPOINT: z.url({ message: 'HEARTH_S3_ENDPOINT must be a URL' }).optional(),
  HEARTH_S3_REGION: z.string().default('us-east-1'),
  HEARTH_S3_PREFIX: z
    .string()
    .regex(/^([A-Za-z0-9._-]+\/)*$/, 'HEARTH_S3_PREFIX must be empty or end with "/" (letters, digits, ".", "_", "-")')
    .default(''),
  HEARTH_CACHE_MAX_BYTES: integer('HEARTH_CACHE_MAX_BYTES', 'a number of bytes')
    .min(1 << 20, 'HEARTH_CACHE_MAX_BYTES must be at least 1 MiB')
    .default(20 * 2 ** 30),
  HEARTH_MAX_BODY_BYTES: integer('HEARTH_MAX_BODY_BYTES', 'a number of bytes')
    .min(1024)
    .default(64 * 2 ** 20),
  HEARTH_MAX_JSON_BYTES: integer('HEARTH_MAX_JSON_BYTES', 'a number of bytes')
    .min(1024)
    .default(32 * 2 ** 20),
  HEARTH_API_KEYS: z.string().optional(),
  HEARTH_API_KEYS_FILE: z.string().min(1, 'HEARTH_API_KEYS_FILE must name a file').optional(),
  HEARTH_ALLOW_ANONYMOUS: z.enum(['0', '1', 'true', 'false']).default('0'),
  HEARTH_TLS_CERT: z.string().min(1).optional(),
  HEARTH_TLS_KEY: z.string().min(1).optional(),
  HEARTH_TLS_CLIENT_CA: z.string().min(1).optional(),
  HEARTH_METRICS_KEY: z.string().min(16, 'HEARTH_METRICS_KEY must be at least 16 characters').optional(),
  HEARTH_SECRETS_KEY: z.string().min(1).optional(),
  HEARTH_SECRETS_KEY_FILE: z.string().min(1, 'HEARTH_SECRETS_KEY_FILE must name a file').optional(),
  HEARTH_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  HEARTH_INTRA_OP_THREADS: integer('HEARTH_INTRA_OP_THREADS', 'a number of threads')
    .min(1, 'HEARTH_INTRA_OP_THREADS must be at least 1')
    .optional(),
  HEARTH_WEBHOOK_SECRET: z
    .string()
    .regex(
      /^(whsec_)?[A-Za-z0-9+/]{16,}={0,2}$/,
      'HEARTH_WEBHOOK_SECRET must be base64 (optionally after whsec_), at least 12 bytes',
    )
    .optional(),
  HEARTH_JOB_ATTEMPTS: integer('HEARTH_JOB_ATTEMPTS', 'a number').min(1).max(20).default(3),
  HEARTH_JOB_BACKOFF_MS: integer('HEARTH_JOB_BACKOFF_MS', 'a number of milliseconds').min(1).default(1000),
  HEARTH_JOB_RESULT_TTL_S: integer('HEARTH_JOB_RESULT_TTL_S', 'a number of seconds').min(1).default(86_400),
  HEARTH_JOB_LOCK_MS: integer('HEARTH_JOB_LOCK_MS', 'a number of milliseconds').min(1000).default(30_000),
  HEARTH_JOB_CONCURRENCY: integer('HEARTH_JOB_CONCURRENCY', 'a number').min(1).max(1024).default(64),
  HEARTH_JOB_TIMEOUT_MS: integer('HEARTH_JOB_TIMEOUT_MS', 'a number of milliseconds')
    .min(1000)
    .max(2 ** 31 - 1)
    .default(15 * 60_000),
  HEARTH_DRAIN_TIMEOUT_MS: integer('HEARTH_DRAIN_TIMEOUT_MS', 'a number of milliseconds')
    .min(0)
    .max(2 ** 31 - 1)
    .default(120_000),
  HEARTH_WEBHOOK_ALLOW_HOSTS: z.string().optional(),
  HEARTH_SYSTEM_SHARED_MEMORY: z.enum(['auto', 'on', 'off']).default('auto'),
  HEARTH_SHM_PREFIX: z
    .string()
    .regex(/^\/[A-Za-z0-9_.-]*$/, 'HEARTH_SHM_PREFIX must be "/" and letters, digits, "_", "-" or "." (a key prefix)')
    .default('/'),
  HEARTH_ISOLATION: z
    .enum(['process', 'none'], {
      message:
        'HEARTH_ISOLATION must be process (each function version in its own runner process) or none (in the node, for trusted single-tenant use)',
    })
    .default('process'),
  HEARTH_SANDBOX: z
    .enum(['auto', 'strict', 'off'], {
      message:
        "HEARTH_SANDBOX must be auto (every layer of the runners' kernel jail this host offers), strict (all of them, or the node does not start) or off",
    })
    .default('auto'),
  HEARTH_RUNNER_USER: z
    .string()
    .regex(/^[a-z_][a-z0-9_-]*\$?$/, 'HEARTH_RUNNER_USER must be a user name')
    .default('nobody'),
  HEARTH_RUNNER_UID_BASE: integer('HEARTH_RUNNER_UID_BASE', 'a uid')
    .min(1000, 'HEARTH_RUNNER_UID_BASE must be at least 1000 (clear of system users)')
    .max(2 ** 31 - 65_537)
    .default(200_000),
  HEARTH_ARENA_MB: integer('HEARTH_ARENA_MB', 'a number of MiB').min(0).max(65_536).default(DEFAULT_ARENA_MB),
  HEARTH_AUTOSCALE_TICK_MS: integer('HEARTH_AUTOSCALE_TICK_MS', 'a number of milliseconds')
    .min(10)
    .max(1000, 'HEARTH_AUTOSCALE_TICK_MS must be at most 1000: a queue over its target scales up within one tick')
    .default(1000),
});

export interface Config {
  httpPort: number;
  grpcPort: number;
  metricsPort: number;
  host: string;
  dataDir: string;
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
  jobs: {
    attempts: number;
    backoffMs: number;
    resultTtlS: number;
    lockMs: number;
    concurrency: number;
    /** The longest one try of a job may run; past it the try fails (DEADLINE_EXCEEDED). */
    timeoutMs: number;
    webhooks: WebhookPolicy;
  };
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
  /** Runners' group is this user's (when the node runs as root). */
  runnerUser: string;
  /** When the node runs as root, each runner runs as a uid of its own from here up (65 536 of them). */
  runnerUidBase: number;
  /**
   * MiB of shared memory between the node and each runner, for request and response tensors and
   * bodies (runtime/runner/arena.ts); virtual: pages exist once written. 0: everything on the socket.
   */
  arenaMb: number;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|::1|\[::1\])$/;

/** A configured key: 64 hex characters, or base64 of 32 bytes. */
export function parseSecretsKey(text: string, where: string): Buffer {
  const t = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, 'hex') : Buffer.from(t, 'base64');
  if (key.length !== 32)
    throw new InvalidInputError(
      `${where} must be 32 bytes as 64 hex characters or base64 (make one with \`openssl rand -hex 32\`)`,
    );
  return key;
}

/** The key that seals secrets: HEARTH_SECRETS_KEY, or the file HEARTH_SECRETS_KEY_FILE names. */
function secretsKey(text: string | undefined, file: string | undefined): Buffer | undefined {
  if (text) return parseSecretsKey(text, 'HEARTH_SECRETS_KEY');
  if (!file) return undefined;
  let read: string;
  try {
    read = readFileSync(file, 'utf8');
  } catch (error) {
    throw new InvalidInputError(
      `HEARTH_SECRETS_KEY_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code})`,
    );
  }
  return parseSecretsKey(read, `HEARTH_SECRETS_KEY_FILE (${file})`);
}

/** HEARTH_API_KEYS_FILE's keys (a mounted Kubernetes Secret, say); the file must be readable. */
function keysFile(path: string | undefined): ApiKey[] {
  if (!path) return [];
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new InvalidInputError(`HEARTH_API_KEYS_FILE: cannot read ${path} (${(error as NodeJS.ErrnoException).code})`);
  }
  const keys = parseApiKeys(text, 'HEARTH_API_KEYS_FILE');
  if (keys.length === 0) throw new InvalidInputError(`HEARTH_API_KEYS_FILE: ${path} holds no key`);
  return keys;
}

/** Reads and validates the configuration; throws InvalidInputError naming each bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const result = ConfigSchema.safeParse(env);
  if (!result.success) {
    throw new InvalidInputError(
      `invalid configuration: ${result.error.issues.map((i) => `${String(i.path[0])}: ${i.message}`).join('; ')}`,
    );
  }
  const e = result.data;
  const apiKeys = [...parseApiKeys(e.HEARTH_API_KEYS), ...keysFile(e.HEARTH_API_KEYS_FILE)];
  const anonymous = e.HEARTH_ALLOW_ANONYMOUS === '1' || e.HEARTH_ALLOW_ANONYMOUS === 'true';
  const loopback = LOOPBACK.test(e.HEARTH_HOST);
  if (!loopback && apiKeys.length === 0 && !anonymous) {
    throw new InvalidInputError(
      `HEARTH_HOST=${e.HEARTH_HOST} is reachable beyond this machine but no API key is set: set HEARTH_API_KEYS or HEARTH_API_KEYS_FILE, or HEARTH_ALLOW_ANONYMOUS=1 to serve anyone without one`,
    );
  }
  if ((e.HEARTH_TLS_CERT === undefined) !== (e.HEARTH_TLS_KEY === undefined))
    throw new InvalidInputError('HEARTH_TLS_CERT and HEARTH_TLS_KEY go together: set both (or neither)');
  if (e.HEARTH_TLS_CLIENT_CA && !e.HEARTH_TLS_CERT)
    throw new InvalidInputError(
      'HEARTH_TLS_CLIENT_CA needs HEARTH_TLS_CERT and HEARTH_TLS_KEY: mutual TLS is TLS first',
    );
  if (e.HEARTH_S3_ENDPOINT && !e.HEARTH_S3_BUCKET)
    throw new InvalidInputError('HEARTH_S3_ENDPOINT is set but HEARTH_S3_BUCKET is not: name the bucket');
  return {
    httpPort: e.HEARTH_HTTP_PORT,
    grpcPort: e.HEARTH_GRPC_PORT,
    metricsPort: e.HEARTH_METRICS_PORT,
    host: e.HEARTH_HOST,
    dataDir: e.HEARTH_DATA_DIR,
    redisUrl: e.REDIS_URL,
    redisPrefix: e.HEARTH_REDIS_PREFIX,
    s3: e.HEARTH_S3_BUCKET
      ? {
          bucket: e.HEARTH_S3_BUCKET,
          endpoint: e.HEARTH_S3_ENDPOINT,
          region: e.HEARTH_S3_REGION,
          prefix: e.HEARTH_S3_PREFIX,
        }
      : undefined,
    cacheMaxBytes: e.HEARTH_CACHE_MAX_BYTES,
    maxBodyBytes: e.HEARTH_MAX_BODY_BYTES,
    maxJsonBytes: e.HEARTH_MAX_JSON_BYTES,
    apiKeys,
    loopbackGuard: apiKeys.length === 0 && loopback,
    metricsKey: e.HEARTH_METRICS_KEY,
    secretsKey: secretsKey(e.HEARTH_SECRETS_KEY, e.HEARTH_SECRETS_KEY_FILE),
    ...(e.HEARTH_TLS_CERT && e.HEARTH_TLS_KEY
      ? {
          tls: {
            certFile: e.HEARTH_TLS_CERT,
            keyFile: e.HEARTH_TLS_KEY,
            ...(e.HEARTH_TLS_CLIENT_CA ? { clientCaFile: e.HEARTH_TLS_CLIENT_CA } : {}),
          },
        }
      : {}),
    logLevel: e.HEARTH_LOG_LEVEL,
    intraOpThreads: e.HEARTH_INTRA_OP_THREADS ?? Math.max(1, availableParallelism() - 1),
    autoscaleTickMs: e.HEARTH_AUTOSCALE_TICK_MS,
    drainTimeoutMs: e.HEARTH_DRAIN_TIMEOUT_MS,
    webhookSecret: e.HEARTH_WEBHOOK_SECRET,
    systemSharedMemory:
      e.HEARTH_SYSTEM_SHARED_MEMORY === 'on' ||
      (e.HEARTH_SYSTEM_SHARED_MEMORY === 'auto' && LOOPBACK.test(e.HEARTH_HOST)),
    shmPrefix: e.HEARTH_SHM_PREFIX,
    isolation: e.HEARTH_ISOLATION,
    sandbox: e.HEARTH_SANDBOX,
    runnerUser: e.HEARTH_RUNNER_USER,
    runnerUidBase: e.HEARTH_RUNNER_UID_BASE,
    arenaMb: e.HEARTH_ARENA_MB,
    jobs: {
      attempts: e.HEARTH_JOB_ATTEMPTS,
      backoffMs: e.HEARTH_JOB_BACKOFF_MS,
      resultTtlS: e.HEARTH_JOB_RESULT_TTL_S,
      lockMs: e.HEARTH_JOB_LOCK_MS,
      concurrency: e.HEARTH_JOB_CONCURRENCY,
      timeoutMs: e.HEARTH_JOB_TIMEOUT_MS,
      webhooks: { allowHosts: parseAllowHosts(e.HEARTH_WEBHOOK_ALLOW_HOSTS) },
    },
  };
}
