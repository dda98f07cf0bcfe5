/**
 * The node's configuration, from environment variables, validated at start: a bad value stops the
 * node with a message that names the variable.
 */
import { totalmem } from 'node:os';
import { join } from 'node:path';

import type { z } from 'zod';

import { usableCores } from '../../runtime/engine/index.js';
import { InvalidInputError } from '../../sdk/errors.js';
import { parseAllowHosts } from '../jobs/index.js';
import type { ApiKey } from './api-keys.js';
import { keysFile, parseApiKeys } from './api-keys.js';
import type { Config, TlsFiles } from './config.js';
import { ConfigSchema } from './schema.js';
import { secretsKey } from './secrets-key.js';

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|::1|\[::1\])$/;

type Env = z.infer<typeof ConfigSchema>;

/** The environment, parsed; every bad variable named in one error. */
function parseEnv(env: NodeJS.ProcessEnv): Env {
  const result = ConfigSchema.safeParse(env);
  if (!result.success) {
    throw new InvalidInputError(
      `invalid configuration: ${result.error.issues.map((i) => `${String(i.path[0])}: ${i.message}`).join('; ')}`,
    );
  }
  return result.data;
}

/** Settings that are each valid but not together: refused, naming the fix. */
function checkCombinations(e: Env, apiKeys: ApiKey[]): void {
  const anonymous = e.HEARTH_ALLOW_ANONYMOUS === '1' || e.HEARTH_ALLOW_ANONYMOUS === 'true';
  if (!LOOPBACK.test(e.HEARTH_HOST) && apiKeys.length === 0 && !anonymous) {
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
}

/** `{ tls }` when a certificate and key are set, else nothing. */
function tlsOf(e: Env): { tls?: TlsFiles } {
  return e.HEARTH_TLS_CERT && e.HEARTH_TLS_KEY
    ? {
        tls: {
          certFile: e.HEARTH_TLS_CERT,
          keyFile: e.HEARTH_TLS_KEY,
          ...(e.HEARTH_TLS_CLIENT_CA ? { clientCaFile: e.HEARTH_TLS_CLIENT_CA } : {}),
        },
      }
    : {};
}

/** MiB the node's runners may hold in all: the host's memory (or its cgroup's limit) less a reserve. */
function allocatableMb(e: Env): number {
  const constrained = process.constrainedMemory?.() ?? 0;
  const host = Math.floor(Math.min(totalmem(), constrained > 0 ? constrained : Infinity) / 2 ** 20);
  const memory = e.HEARTH_NODE_MEMORY_MB ?? host;
  // A tenth, at least 1 GiB — but never more than a quarter of a small host's.
  const reserved =
    e.HEARTH_NODE_RESERVED_MB ?? Math.min(Math.max(1024, Math.floor(memory / 10)), Math.floor(memory / 4));
  if (reserved >= memory)
    throw new InvalidInputError(
      `HEARTH_NODE_RESERVED_MB (${reserved}) leaves nothing of HEARTH_NODE_MEMORY_MB (${memory}) to runners: lower it`,
    );
  return memory - reserved;
}

/** Reads and validates the configuration; throws InvalidInputError naming each bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const e = parseEnv(env);
  const apiKeys = [...parseApiKeys(e.HEARTH_API_KEYS), ...keysFile(e.HEARTH_API_KEYS_FILE)];
  checkCombinations(e, apiKeys);
  const loopback = LOOPBACK.test(e.HEARTH_HOST);
  return {
    httpPort: e.HEARTH_HTTP_PORT,
    grpcPort: e.HEARTH_GRPC_PORT,
    metricsPort: e.HEARTH_METRICS_PORT,
    host: e.HEARTH_HOST,
    dataDir: e.HEARTH_DATA_DIR,
    traceDir: e.HEARTH_TRACE_DIR ?? join(e.HEARTH_DATA_DIR, 'traces'),
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
    ...tlsOf(e),
    logLevel: e.HEARTH_LOG_LEVEL,
    intraOpThreads: e.HEARTH_INTRA_OP_THREADS ?? Math.max(1, usableCores().cores - 1),
    autoscaleTickMs: e.HEARTH_AUTOSCALE_TICK_MS,
    drainTimeoutMs: e.HEARTH_DRAIN_TIMEOUT_MS,
    webhookSecret: e.HEARTH_WEBHOOK_SECRET,
    systemSharedMemory:
      e.HEARTH_SYSTEM_SHARED_MEMORY === 'on' || (e.HEARTH_SYSTEM_SHARED_MEMORY === 'auto' && loopback),
    shmPrefix: e.HEARTH_SHM_PREFIX,
    isolation: e.HEARTH_ISOLATION,
    sandbox: e.HEARTH_SANDBOX,
    runnerTemplate: e.HEARTH_RUNNER_TEMPLATE === 'on',
    runnerUser: e.HEARTH_RUNNER_USER,
    runnerUidBase: e.HEARTH_RUNNER_UID_BASE,
    arenaMb: e.HEARTH_ARENA_MB,
    runnerMemoryBudgetMb: allocatableMb(e),
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
