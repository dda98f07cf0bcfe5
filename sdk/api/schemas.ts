/**
 * The management API's contract: every request and response body as a zod schema. The node
 * validates request bodies with them; the client parses responses with them and takes its types
 * from them (z.infer), so the two cannot drift apart. Responses are loose objects: a newer node may
 * add fields, which an older client keeps and ignores.
 */
import { z } from 'zod';

import type { FunctionSpec } from '../spec/function-spec.js';
import { CanaryRequestSchema, CanarySchema } from './canary-schemas.js';

// Jobs' and function logs' bodies, and canaries', in files of their own.
export * from './canary-schemas.js';
export * from './job-schemas.js';

const SHA256 = /^[0-9a-f]{64}$/;
const sha = (what: string) =>
  z
    .string({ message: `${what} must be the sha256 of an uploaded artifact` })
    .regex(SHA256, `${what} must be 64 lowercase hex digits`);

// --- requests ---------------------------------------------------------------------------------------

/** POST /api/v1/functions. `spec` is checked by the function spec's own schema (parseSpec). */
export const DeployRequestSchema = z.object(
  {
    spec: z.unknown(),
    artifacts: z.object(
      {
        model: sha('artifacts.model'),
        hook: sha('artifacts.hook').optional(),
        example: sha('artifacts.example').optional(),
      },
      { message: 'send "artifacts": {"model": "<sha256>", "hook": "<sha256>"}' },
    ),
    keepTraffic: z.boolean().optional(),
    canary: CanaryRequestSchema.optional(),
  },
  { message: 'send {"spec": {...}, "artifacts": {"model": "<sha256>", "hook": "<sha256>"}}' },
);
export type DeployRequest = z.infer<typeof DeployRequestSchema>;

/** PUT /api/v1/functions/{name}/traffic */
export const TrafficRequestSchema = z.object(
  {
    traffic: z.record(z.string(), z.number({ message: 'each weight must be a number' }), {
      message: 'send {"traffic": {"<version>": <weight>, ...}}',
    }),
  },
  { message: 'send {"traffic": {"<version>": <weight>, ...}}' },
);
export type TrafficRequest = z.infer<typeof TrafficRequestSchema>;

/** One second of a version's time series (GET /api/v1/functions/{name}/series). */
export const SeriesSampleSchema = z.looseObject({
  /** Date.now() of the sample. */
  at: z.number(),
  /** Requests answered and failed in the second before. */
  reqPerS: z.number(),
  errPerS: z.number(),
  p50Ms: z.number().nullable(),
  p99Ms: z.number().nullable(),
  /** Rows per forward over the second (null: no forward ran). */
  meanBatch: z.number().nullable(),
  queueDepth: z.number(),
  instances: z.number(),
  busy: z.number(),
  loading: z.number(),
});
export type SeriesSample = z.infer<typeof SeriesSampleSchema>;
export const SeriesResultSchema = z.looseObject({
  name: z.string(),
  versions: z.record(z.string(), z.array(SeriesSampleSchema)),
});
export type SeriesResult = z.infer<typeof SeriesResultSchema>;

/** A node of the cluster (GET /api/v1/nodes): a single node lists itself. */
export const NodeInfoSchema = z.looseObject({
  id: z.string(),
  self: z.boolean(),
  http: z.string().optional(),
  startedAt: z.string(),
  heartbeatAgeMs: z.number(),
  pools: z.number(),
});
export type NodeInfo = z.infer<typeof NodeInfoSchema>;
export const NodeListSchema = z.looseObject({ nodes: z.array(NodeInfoSchema) });
export type NodeList = z.infer<typeof NodeListSchema>;

/** PUT /api/v1/secrets/{name} */
export const SecretRequestSchema = z.strictObject(
  { value: z.string({ message: 'send {"value": "<the secret>"}' }) },
  { message: 'send {"value": "<the secret>"}' },
);

export const SecretInfoSchema = z.looseObject({ name: z.string(), updatedAt: z.string() });
export type SecretInfo = z.infer<typeof SecretInfoSchema>;
export const SecretListSchema = z.looseObject({ secrets: z.array(SecretInfoSchema) });
export type SecretList = z.infer<typeof SecretListSchema>;
export const SecretDeletedSchema = z.looseObject({ name: z.string(), deleted: z.boolean() });
export type SecretDeleted = z.infer<typeof SecretDeletedSchema>;

/** PATCH /api/v1/functions/{name}/scaling: the settings to change, of one version or of those taking traffic. */
export const ScalingRequestSchema = z.strictObject(
  {
    version: z.number().int().min(1).optional(),
    minInstances: z.number().optional(),
    maxInstances: z.number().optional(),
    targetQueueDepth: z.number().optional(),
    scaleDownAfterS: z.number().optional(),
    stableWindowS: z.number().optional(),
  },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unknown scaling setting ${issue.keys.map((k) => `"${k}"`).join(', ')}: send version, minInstances, maxInstances, targetQueueDepth, scaleDownAfterS or stableWindowS`
        : 'send {"minInstances": n, "maxInstances": n, "targetQueueDepth": n, "scaleDownAfterS": s, "version": v} (each optional)',
  },
);
export type ScalingRequest = z.infer<typeof ScalingRequestSchema>;

export const ScalingResultSchema = z.looseObject({
  name: z.string(),
  versions: z.array(z.looseObject({ version: z.number(), scaling: z.record(z.string(), z.number()) })),
});
export type ScalingResult = z.infer<typeof ScalingResultSchema>;

export const RollbackResultSchema = z.looseObject({
  name: z.string(),
  traffic: z.record(z.string(), z.number()),
  from: z.record(z.string(), z.number()),
});
export type RollbackResult = z.infer<typeof RollbackResultSchema>;

/** POST /api/v1/artifacts/import */
export const ImportRequestSchema = z.object(
  { uri: z.string({ message: 'send {"uri": "s3://bucket/prefix/key"}' }) },
  { message: 'send {"uri": "s3://bucket/prefix/key"}' },
);

// --- responses --------------------------------------------------------------------------------------

/**
 * A response as the node builds it: the schema's type without the loose objects' index signatures,
 * at every depth, so the node's own interfaces are assignable to it and a field the schema lacks,
 * renamed or retyped, fails the node's type check (`reply satisfies Reply<DeployResult>`).
 */
export type Reply<T> = T extends readonly (infer U)[]
  ? Reply<U>[]
  : T extends object
    ? { [K in keyof T as string extends K ? never : K]: Reply<T[K]> }
    : T;

export const ArtifactInfoSchema = z.looseObject({ sha256: z.string(), size: z.number() });
export type ArtifactInfo = z.infer<typeof ArtifactInfoSchema>;
/** PUT /api/v1/artifacts/{sha}: whether this upload stored it (false: it was there). */
export const ArtifactStoredSchema = ArtifactInfoSchema.extend({ created: z.boolean() });
export type ArtifactStored = z.infer<typeof ArtifactStoredSchema>;

export const DeployResultSchema = z.looseObject({
  name: z.string(),
  version: z.number(),
  status: z.enum(['ready', 'failed', 'pending']),
  reason: z.string().optional(),
  url: z.string(),
  /** Present when the deploy started a canary (its state as it began). */
  canary: CanarySchema.optional(),
  /** What the node thinks the caller should know, as sentences (threads × instances past its cores). */
  warnings: z.array(z.string()).optional(),
});
export type DeployResult = z.infer<typeof DeployResultSchema>;

export const FunctionVersionInfoSchema = z.looseObject({
  version: z.number(),
  /**
   * `pending`, `ready`, `failed`, or `rolled-back`: ready, but its canary rolled the traffic back
   * from it (`reason` says why); it takes traffic again when a split gives it some.
   */
  status: z.string(),
  reason: z.string().optional(),
  /** Cluster mode: pending until a node with a GPU loads it. */
  waitsFor: z.literal('gpu').optional(),
  /** With waitsFor: the traffic split stays as it is once the version is loaded. */
  keepTraffic: z.boolean().optional(),
  /** A canary rolled the traffic back from this version (until it takes traffic again). */
  rolledBackBy: z.literal('canary').optional(),
  createdAt: z.string(),
  /** The version's spec as the node parsed it (parseSpec's output, every default filled in). */
  spec: z.custom<FunctionSpec>((v) => typeof v === 'object' && v !== null && !Array.isArray(v)),
  artifacts: z.looseObject({ model: z.string(), hook: z.string().optional(), example: z.string().optional() }),
});
export type FunctionVersionInfo = z.infer<typeof FunctionVersionInfoSchema>;

const DurationSchema = z.object({ count: z.number(), totalUs: z.number(), maxUs: z.number() });

export const PoolInfoSchema = z.looseObject({
  node: z.string().optional(),
  function: z.string(),
  version: z.number(),
  state: z.string(),
  device: z.string(),
  instances: z.object({ total: z.number(), idle: z.number(), busy: z.number(), loading: z.number() }),
  queueDepth: z.number(),
  pending: z.number(),
  success: z.number(),
  failure: z.number(),
  durations: z.record(z.string(), DurationSchema).optional(),
  latency: z.object({ p50Ms: z.number(), p99Ms: z.number(), of: z.number() }).optional(),
  batchSizes: z.record(z.string(), z.number()).optional(),
  /** The latest cold start's phases, in seconds (and where the model came from). */
  coldStart: z
    .looseObject({
      queue: z.number().optional(),
      fetch: z.number(),
      load: z.number(),
      warmup: z.number(),
      source: z.string().optional(),
      runner: z.number().optional(),
      runnerJail: z.number().optional(),
      runnerRuntime: z.number().optional(),
      runnerFrom: z.enum(['template', 'exec']).optional(),
    })
    .optional(),
  /** On CUDA: the pool's process's caching allocator on its device, and its cap (instances.gpuMemory). */
  gpuMemory: z
    .object({ allocatedBytes: z.number(), reservedBytes: z.number(), capBytes: z.number().optional() })
    .optional(),
});
export type PoolInfo = z.infer<typeof PoolInfoSchema>;

/** How a CPU version's forwards share the answering node's cores (runtime/pool/capacity.ts threadPlan). */
export const ThreadPlanSchema = z.looseObject({
  cores: z.number(),
  threadsPerInstance: z.number(),
  instances: z.number(),
  lentWhenAlone: z.boolean(),
  warning: z.string().optional(),
});
export type ThreadPlanInfo = z.infer<typeof ThreadPlanSchema>;

export const FunctionInfoSchema = z.looseObject({
  name: z.string(),
  createdAt: z.string(),
  versions: z.array(FunctionVersionInfoSchema),
  traffic: z.record(z.string(), z.number()),
  previousTraffic: z.record(z.string(), z.number()).optional(),
  /** The latest canary: watching, or what it decided. */
  canary: CanarySchema.optional(),
  pools: z.array(PoolInfoSchema),
  /** Each CPU version's threads on the node that answered (absent for versions placed on a GPU). */
  threads: z.record(z.string(), ThreadPlanSchema).optional(),
});
export type FunctionInfo = z.infer<typeof FunctionInfoSchema>;

const CatalogTensorSchema = z.looseObject({ name: z.string(), dtype: z.string(), dims: z.array(z.number()) });

/**
 * GET /api/v1/catalog: what any key may call (an invoke key included) — each function's versions
 * with their inputs and outputs, and the traffic split — and the scope and tenant of the key asking
 * (a deploy key manages its tenant's functions, an admin key every tenant's).
 */
export const CatalogSchema = z.looseObject({
  scope: z.enum(['invoke', 'deploy', 'admin']),
  tenant: z.string().optional(),
  functions: z.array(
    z.looseObject({
      name: z.string(),
      traffic: z.record(z.string(), z.number()),
      versions: z.array(
        z.looseObject({
          version: z.number(),
          status: z.string(),
          inputs: z.array(CatalogTensorSchema),
          outputs: z.array(CatalogTensorSchema),
          maxBatchSize: z.number(),
          /** Whether a hook shapes its requests (else the body is {"inputs": {name: value}}). */
          hook: z.boolean(),
          /** The spec's example: a body the version answered before it took traffic. */
          example: z.json().optional(),
          /** The name of the spec's example file, when the example is a file. */
          exampleFile: z.string().optional(),
        }),
      ),
    }),
  ),
});
export type Catalog = z.infer<typeof CatalogSchema>;
export type CatalogEntry = Catalog['functions'][number];

export const FunctionListEntrySchema = z.looseObject({
  name: z.string(),
  createdAt: z.string(),
  versions: z.number(),
  latest: z.number().optional(),
  traffic: z.record(z.string(), z.number()),
  /**
   * `failing` when no version can serve (every one failed to load or its smoke request) or, over the
   * last minute, more of its calls failed than were answered; with the last reason.
   */
  health: z.looseObject({ failing: z.boolean(), reason: z.string().optional() }).optional(),
});
export type FunctionListEntry = z.infer<typeof FunctionListEntrySchema>;
export const FunctionListSchema = z.looseObject({ functions: z.array(FunctionListEntrySchema) });
export type FunctionList = z.infer<typeof FunctionListSchema>;

/** DELETE /api/v1/functions/{name} */
export const FunctionDeletedSchema = z.looseObject({ deleted: z.string() });
export type FunctionDeleted = z.infer<typeof FunctionDeletedSchema>;

export const TrafficResultSchema = z.looseObject({ name: z.string(), traffic: z.record(z.string(), z.number()) });
export type TrafficResult = z.infer<typeof TrafficResultSchema>;

export const PoolListSchema = z.looseObject({ pools: z.array(PoolInfoSchema) });
export type PoolList = z.infer<typeof PoolListSchema>;
