/**
 * The environment variables a node reads, as one zod schema: each with its default and the message
 * that names it when its value is bad. loadConfig (./load-config.ts) turns them into a Config.
 */
import { z } from 'zod';

import { DEFAULT_ARENA_MB } from '../../runtime/index.js';

const port = (name: string, fallback: number) =>
  z.coerce
    .number({ message: `${name} must be a port number` })
    .int(`${name} must be an integer`)
    .min(0, `${name} must be 0-65535 (0 picks a free port)`)
    .max(65535, `${name} must be 0-65535 (0 picks a free port)`)
    .default(fallback);

/** An integer from the environment (`name` must be `what`, says the error otherwise). */
const integer = (name: string, what: string) => z.coerce.number({ message: `${name} must be ${what}` }).int();

export const ConfigSchema = z.object({
  HEARTH_HTTP_PORT: port('HEARTH_HTTP_PORT', 8000),
  HEARTH_GRPC_PORT: port('HEARTH_GRPC_PORT', 8001),
  HEARTH_METRICS_PORT: port('HEARTH_METRICS_PORT', 8002),
  HEARTH_HOST: z.string().min(1, 'HEARTH_HOST must not be empty').default('127.0.0.1'),
  HEARTH_DATA_DIR: z.string().min(1, 'HEARTH_DATA_DIR must not be empty').default('./.hearth'),
  HEARTH_TRACE_DIR: z.string().min(1, 'HEARTH_TRACE_DIR must not be empty').optional(),
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
  HEARTH_RUNNER_TEMPLATE: z
    .enum(['on', 'off'], {
      message:
        'HEARTH_RUNNER_TEMPLATE must be on (jailed runners forked from a template with LibTorch loaded) or off (each execs Node)',
    })
    .default('on'),
  HEARTH_RUNNER_USER: z
    .string()
    .regex(/^[a-z_][a-z0-9_-]*\$?$/, 'HEARTH_RUNNER_USER must be a user name')
    .default('nobody'),
  HEARTH_RUNNER_UID_BASE: integer('HEARTH_RUNNER_UID_BASE', 'a uid')
    .min(1000, 'HEARTH_RUNNER_UID_BASE must be at least 1000 (clear of system users)')
    .max(2 ** 31 - 65_537)
    .default(200_000),
  HEARTH_ARENA_MB: integer('HEARTH_ARENA_MB', 'a number of MiB').min(0).max(65_536).default(DEFAULT_ARENA_MB),
  // The node's allocatable memory for runners (Kubernetes' node allocatable): HEARTH_NODE_MEMORY_MB
  // (default: the host's, or the node's cgroup limit where lower) less HEARTH_NODE_RESERVED_MB
  // (default: a tenth of it, at least 1024 MiB) for the node itself.
  HEARTH_NODE_MEMORY_MB: integer('HEARTH_NODE_MEMORY_MB', 'a number of MiB').min(256).optional(),
  HEARTH_NODE_RESERVED_MB: integer('HEARTH_NODE_RESERVED_MB', 'a number of MiB').min(0).optional(),
  HEARTH_AUTOSCALE_TICK_MS: integer('HEARTH_AUTOSCALE_TICK_MS', 'a number of milliseconds')
    .min(10)
    .max(1000, 'HEARTH_AUTOSCALE_TICK_MS must be at most 1000: a queue over its target scales up within one tick')
    .default(1000),
});
