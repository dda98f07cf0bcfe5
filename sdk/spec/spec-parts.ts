/**
 * The parts of a function spec (function-spec.ts puts them together): the name rule, tensors,
 * batching, instances, warm-up samples, sequences, limits, execution and scaling, each a zod schema
 * with the description hearth.schema.json shows in editors.
 */
import { z } from 'zod';

import { DTYPES } from '../tensor.js';

/**
 * Triton's model names: letters (either case), digits, '_', '-' and '.', 1-128 characters, not
 * starting with '.' or '-' (so never "." or "..", and never a hidden or option-like file name).
 * Names reach file paths and Redis keys only after this check (see assertFunctionName).
 */
export const FUNCTION_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
export const FUNCTION_NAME_RULE =
  'letters, digits, "_", "-" and ".", at most 128 characters, starting with a letter, digit or "_"';

export const relativePath = z
  .string()
  .min(1)
  .refine((p) => !p.startsWith('/') && !p.split(/[\\/]/).includes('..'), {
    message: 'must be a path inside the function folder (no leading "/", no "..")',
  });

export const TensorSpecSchema = z.strictObject({
  name: z
    .string()
    .min(1)
    .max(128)
    .regex(
      /^[A-Za-z0-9_][A-Za-z0-9_.:-]*$/,
      'must start with a letter, digit or "_" and hold only letters, digits, "_", ".", ":" and "-"',
    )
    .describe("The tensor's name: a key of the hook's tensors, and the name KServe clients use."),
  dtype: z.enum(DTYPES).describe("Triton's datatype names (FP32, INT64, …)."),
  /** Dimensions without the batch dimension; -1 is variable. */
  dims: z.array(z.number().int().min(-1)).describe('Dimensions without the batch dimension; -1 is variable.'),
  /** The shape the model takes or returns instead of dims (Triton's reshape); the bytes are the same. */
  reshape: z
    .array(z.number().int().min(-1))
    .optional()
    .describe(
      "The shape (without the batch dimension) the model takes or returns instead of dims, as Triton's reshape; the bytes are the same.",
    ),
});

export const InputSpecSchema = TensorSpecSchema.extend({
  /** An image input's layout (Triton's format), reported in the model config for clients such as image_client. */
  format: z
    .enum(['FORMAT_NONE', 'FORMAT_NCHW', 'FORMAT_NHWC'])
    .optional()
    .describe("An image input's layout (Triton's format: FORMAT_NCHW, FORMAT_NHWC), reported in the model config."),
});

export const OutputSpecSchema = TensorSpecSchema.extend({
  /** The file the labels came from (Triton's label_filename), as the model config reports it. */
  labelFile: z
    .string()
    .max(1024)
    .optional()
    .describe("The file the labels came from (Triton's label_filename), as the model config reports it."),
  /** Class labels, one per index of this output (Triton's label_filename), for classification. */
  labels: z
    .array(z.string().max(1024))
    .max(1_000_000)
    .optional()
    .describe(
      'Class labels, one per index of this output (Triton\'s label_filename): the label part of a classification\'s "score:index:label".',
    ),
});

export const BatchingSchema = z
  .strictObject({
    /** Batch sizes the batcher forms when it can (Triton's preferred_batch_size). */
    preferredBatchSizes: z
      .array(z.number().int().min(1))
      .default([])
      .describe("Batch sizes the batcher forms when it can (Triton's preferred_batch_size)."),
    /** How long a request may wait for a preferred batch to fill, while an instance is free. */
    maxQueueDelayUs: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe('How long a request may wait for a preferred batch to fill, while an instance is free.'),
    /** Requests queued at most (0 = unbounded); beyond it requests fail with QueueFullError. */
    maxQueueSize: z
      .number()
      .int()
      .min(0)
      .default(4096)
      .describe(
        'Requests queued for the model at most (0 = unbounded); beyond it requests fail with QueueFullError (429).',
      ),
    /** A request still queued after this long fails without running (0 = no timeout). */
    defaultTimeoutUs: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe('A request still queued after this long fails without running (0 = no timeout).'),
    /** Priority levels (1 = highest); requests of a higher level are batched first. */
    priorityLevels: z
      .number()
      .int()
      .min(1)
      .max(32)
      .default(1)
      .describe('Priority levels (1 = highest); requests of a higher level are batched first.'),
    /** The level of a request that names none. */
    defaultPriorityLevel: z.number().int().min(1).default(1).describe('The level of a request that names none.'),
  })
  .refine((b) => b.defaultPriorityLevel <= b.priorityLevels, {
    message: 'must be ≤ priorityLevels',
    path: ['defaultPriorityLevel'],
  });

const GPU_MEMORY_SIZE = /^(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|KiB|MiB|GiB|TiB)$/;
const UNITS: Record<string, number> = {
  B: 1,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  KiB: 2 ** 10,
  MiB: 2 ** 20,
  GiB: 2 ** 30,
  TiB: 2 ** 40,
};

export const InstancesSchema = z.strictObject({
  /** Instances started with the pool; they share one copy of the weights per device. */
  count: z
    .number()
    .int()
    .min(1)
    .max(64)
    .default(1)
    .describe('Instances started with the pool; they share one copy of the weights per device.'),
  /** `auto` (CUDA when there is one, else CPU), `cpu`, `cuda`, `cuda:N`, or `model` (the devices the model was saved on; inputs on the CPU — Triton's KIND_MODEL). */
  device: z
    .string()
    .regex(/^(auto|cpu|model|cuda(:\d+)?)$/, 'must be auto, cpu, cuda, cuda:N or model')
    .default('auto')
    .describe(
      "`auto` (CUDA when there is one, else CPU), `cpu`, `cuda`, `cuda:N`, or `model`: the devices the model was saved on, inputs on the CPU (Triton's KIND_MODEL).",
    ),
  /** LibTorch intra-op threads per forward (0 = the node's default). */
  threads: z
    .number()
    .int()
    .min(0)
    .max(256)
    .default(0)
    .describe("LibTorch intra-op threads per forward (0 = the node's default)."),
  /** A cap on the runner's CUDA caching allocator: a fraction of the device (0.25) or a size ('12GiB'). */
  gpuMemory: z
    .union([
      z.number().gt(0).max(1),
      z.string().regex(GPU_MEMORY_SIZE, "must be a size such as '12GiB', '800MiB' or '16GB', or a fraction 0-1"),
    ])
    .optional()
    .describe(
      "A cap on the runner's CUDA caching allocator on its device (seed 001's allow-gpu-memory-growth concern): a fraction of the device's memory (0.25) or a size ('12GiB'). Allocations past it fail as out of memory in this function only; a pool is placed only where this much is free.",
    ),
});

/** A spec's gpuMemory in bytes on a device of `totalBytes`; undefined without a cap. */
export function gpuMemoryBytes(gpuMemory: number | string | undefined, totalBytes: number): number | undefined {
  if (gpuMemory === undefined) return undefined;
  if (typeof gpuMemory === 'number') return Math.floor(gpuMemory * totalBytes);
  const [, amount, unit] = GPU_MEMORY_SIZE.exec(gpuMemory)!;
  return Math.floor(Number(amount) * UNITS[unit!]!);
}

/** A warm-up sample (Triton's model_warmup): inputs made of zeros or random values, run `count` times at load. */
export const WarmupSchema = z.strictObject({
  name: z.string().max(128).default('warmup').describe('A name for people and logs.'),
  batchSize: z.number().int().min(1).default(1).describe('Rows of the sample (with maxBatchSize > 0).'),
  count: z.number().int().min(1).max(1000).default(1).describe('How many times the sample runs.'),
  inputs: z
    .record(
      z.string(),
      z.strictObject({
        dtype: z.enum(DTYPES),
        dims: z.array(z.number().int().min(1)),
        fill: z.enum(['zero', 'random']).default('zero'),
      }),
    )
    .describe('Every input of the model, by name: its dtype, dims (no batch dimension) and fill.'),
});

/** A control input the sequence batcher fills (Triton's CONTROL_SEQUENCE_START / END / READY / CORRID). */
export const SequenceControlSchema = z.strictObject({
  name: z.string().min(1).max(128).describe('The forward() input it feeds.'),
  kind: z
    .enum(['start', 'end', 'ready', 'corrid'])
    .describe(
      'start/end: the request opens/closes its sequence; ready: the row holds a request (0 for a filler row); corrid: the sequence id.',
    ),
  dtype: z.enum(['BOOL', 'INT32', 'INT64', 'FP32']).describe('Its datatype.'),
  /** The values for false and true (start/end/ready). */
  values: z
    .tuple([z.number(), z.number()])
    .default([0, 1])
    .describe('The values for false and true (start, end, ready).'),
});

const stateName = TensorSpecSchema.shape.name;
/** 64 Mi elements: the node allocates a state per row of every batch, and keeps one per live sequence. */
const MAX_STATE_ELEMENTS = 2 ** 26;

/**
 * Implicit state (Triton's sequence_batching.state): the node keeps a tensor per sequence for the
 * model. Each request's forward() gets it as the input `input` — zeros on the sequence's START
 * request — and returns the next one as its output `output`, which the node keeps for the
 * sequence's next request and does not answer with. Neither is a client input or output.
 */
export const SequenceStateSchema = z.strictObject({
  input: stateName.describe('The forward() input the state is given as.'),
  output: stateName.describe('The model output the next state is read from.'),
  dtype: z
    .enum(DTYPES)
    .refine((d) => d !== 'BYTES', 'a state is a numeric tensor (BYTES cannot be kept as zeros of a shape)')
    .describe("The state's datatype."),
  dims: z
    .array(z.number().int().min(1))
    .min(1)
    .refine((d) => d.reduce((n, x) => n * x, 1) <= MAX_STATE_ELEMENTS, {
      message: `a state holds at most ${MAX_STATE_ELEMENTS} elements a sequence (the node keeps one per live sequence)`,
    })
    .describe("The state's dimensions, without the batch dimension (fixed: a state starts as zeros of this shape)."),
});

/**
 * Stateful models (Triton's sequence_batching): every request names its sequence; a sequence
 * stays on one instance (and, for direct, one batch slot), one request at a time, in order.
 */
export const SequenceSchema = z.strictObject({
  strategy: z
    .enum(['direct', 'oldest'])
    .default('direct')
    .describe(
      "direct: each sequence keeps one batch slot of one instance; oldest: batches take the oldest requests of the instance's sequences.",
    ),
  maxSequenceIdleUs: z
    .number()
    .int()
    .min(1)
    .default(1_000_000)
    .describe('A sequence with no request for this long is released.'),
  maxQueueDelayUs: z
    .number()
    .int()
    .min(0)
    .default(0)
    .describe("How long a batch may wait for more of its sequences' requests."),
  maxCandidateSequences: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('oldest: sequences one instance holds at once (default maxBatchSize, at least 1).'),
  controls: z.array(SequenceControlSchema).default([]).describe('The control inputs the batcher fills.'),
  states: z
    .array(SequenceStateSchema)
    .default([])
    .describe("Tensors the node keeps per sequence for the model (Triton's implicit state)."),
});

/** What one call of the function may take (issue 11's per-function limits; the node's defaults otherwise). */
export const LimitsSchema = z.strictObject({
  hookTimeoutMs: z
    .number()
    .int()
    .min(1)
    .max(600_000)
    .default(10_000)
    .describe('A hook call (pre or post) past this is stopped, its thread replaced, and the request fails.'),
  hookQueueSize: z
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(4096)
    .describe(
      "Requests waiting for a free hook thread at most; beyond it requests fail with QueueFullError (429). Calls a cheap hook runs on the runner's own thread (64 a turn at most) wait for no thread and are not counted.",
    ),
  hookMemoryMb: z
    .number()
    .int()
    .min(16)
    .max(16_384)
    .default(256)
    .describe(
      "The memory of each hook (its JS heap and ArrayBuffers); past it the hook's sandbox is replaced and its requests fail.",
    ),
  maxResponseMb: z
    .number()
    .int()
    .min(1)
    .max(4096)
    .default(64)
    .describe(
      "The largest response of one call: what a hook's post returns (past it: HOOK_FAILED), and the model's outputs where they leave the runner — KServe and gRPC, and the function URL's default hook — sized before they are copied, their JSON text too (past it: INFERENCE_FAILED). Both are 500s.",
    ),
  hookWebAssembly: z
    .boolean()
    .default(false)
    .describe(
      "Let the hook use WebAssembly. Its memory is outside hookMemoryMb (V8 reserves it apart), so only runnerMemoryMb bounds it; off, the hook's sandbox has no WebAssembly.",
    ),
  runnerMemoryMb: z
    .number()
    .int()
    .min(128)
    .max(1_048_576)
    .default(8192)
    .describe(
      "Resident memory of the function's runner process (model, instances, hooks); past it the runner is killed and restarted, and its requests fail. It counts against the node's memory budget for runners (HEARTH_NODE_MEMORY_MB less HEARTH_NODE_RESERVED_MB): more than that is refused at deploy, and a start past what other runners hold is refused with the numbers.",
    ),
  forwardTimeoutMs: z
    .number()
    .int()
    .min(1)
    .max(3_600_000)
    .default(60_000)
    .describe("A forward pass past this is a hang: the runner is killed and restarted, and the batch's requests fail."),
});

/** How LibTorch runs forward (the parameters Triton's PyTorch backend reads). */
export const ExecutionSchema = z.strictObject({
  inferenceMode: z
    .boolean()
    .default(true)
    .describe("Run forward under c10::InferenceMode (Triton's INFERENCE_MODE); false: under NoGradGuard."),
  optimizedExecution: z
    .boolean()
    .default(true)
    .describe("TorchScript's graph optimisations (false = Triton's DISABLE_OPTIMIZED_EXECUTION)."),
  jitExecutor: z
    .boolean()
    .optional()
    .describe(
      "TorchScript's JIT executor on or off for this model's forwards (Triton's ENABLE_JIT_EXECUTOR); unset: LibTorch's default.",
    ),
  jitProfiling: z
    .boolean()
    .optional()
    .describe("TorchScript's profiling executor on or off (Triton's ENABLE_JIT_PROFILING); unset: LibTorch's default."),
});

export const ScalingSchema = z
  .strictObject({
    minInstances: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe('Instances kept while idle; 0 lets the pool scale to zero.'),
    maxInstances: z
      .number()
      .int()
      .min(1)
      .max(64)
      .default(4)
      .describe("The autoscaler's ceiling (also bounded by the device: memory, and on CPU its engine lanes)."),
    /** Queued plus running requests per instance the autoscaler aims for. */
    targetQueueDepth: z
      .number()
      .int()
      .min(1)
      .default(8)
      .describe('Queued plus running requests per instance the autoscaler aims for.'),
    /** With no requests for this long, the pool scales to minInstances (to zero by default). */
    scaleDownAfterS: z
      .number()
      .int()
      .min(1)
      .default(300)
      .describe('With no requests for this long, the pool scales to minInstances (to zero by default).'),
    /** Instances go down only to the most that load asked for over this window (no flapping). */
    stableWindowS: z
      .number()
      .int()
      .min(1)
      .default(30)
      .describe('Instances go down only to the most that load asked for over this window (no flapping).'),
  })
  .refine((s) => s.minInstances <= s.maxInstances, { message: 'must be ≤ maxInstances', path: ['minInstances'] });
