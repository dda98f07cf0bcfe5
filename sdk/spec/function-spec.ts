/**
 * The function spec: what a model function is, as a user writes it in hearth.yaml. One zod schema
 * is the contract for the CLI, the API and the runtime; hearth.schema.json (generated from it by
 * `npm run schema`) lets editors check hearth.yaml as it is typed.
 *
 * @example
 * name: tabular-mlp
 * model: model.pt
 * maxBatchSize: 64
 * inputs:  [{ name: x, dtype: FP32, dims: [1024] }]
 * outputs: [{ name: y, dtype: FP32, dims: [1024] }]
 * batching: { preferredBatchSizes: [16, 32], maxQueueDelayUs: 500 }
 */
import { z } from 'zod';

import {
  BatchingSchema,
  ExecutionSchema,
  FUNCTION_NAME,
  FUNCTION_NAME_RULE,
  InputSpecSchema,
  InstancesSchema,
  LimitsSchema,
  OutputSpecSchema,
  relativePath,
  ScalingSchema,
  type SequenceControlSchema,
  SequenceSchema,
  type TensorSpecSchema,
  WarmupSchema,
} from './spec-parts.js';

export {
  BatchingSchema,
  ExecutionSchema,
  FUNCTION_NAME,
  FUNCTION_NAME_RULE,
  gpuMemoryBytes,
  InputSpecSchema,
  InstancesSchema,
  LimitsSchema,
  OutputSpecSchema,
  ScalingSchema,
  SequenceControlSchema,
  SequenceSchema,
  TensorSpecSchema,
  WarmupSchema,
} from './spec-parts.js';

/** A secret's name, as an environment variable's would be: `HF_TOKEN`, `DB_PASSWORD`. */
export const SECRET_NAME = /^[A-Z_][A-Z0-9_]{0,63}$/;

/** The spec's fields, each checked on its own; FunctionSpecSchema adds the rules across fields. */
const FunctionSpecFields = z.strictObject({
  name: z
    .string()
    .regex(FUNCTION_NAME, `must be a model name as Triton takes it: ${FUNCTION_NAME_RULE}`)
    .describe(
      'The function\'s name: /fn/{name}, and the model name KServe clients use (Triton\'s model-name rule: letters, digits, "_", "-", ".").',
    ),
  /** The TorchScript file, relative to the spec. */
  model: relativePath.describe('The TorchScript file, relative to the spec.'),
  /** The TypeScript hook, relative to the spec; without one, JSON tensors go in and out. */
  hook: relativePath
    .optional()
    .describe('The TypeScript hook, relative to the spec; without one, JSON tensors go in and out.'),
  description: z.string().max(1000).optional().describe('Free text for people.'),
  inputs: z.array(InputSpecSchema).min(1).describe("The model's inputs, in forward()'s order."),
  outputs: z.array(OutputSpecSchema).min(1).describe("The model's outputs: by position for tuples, by name for dicts."),
  /** Largest batch the model takes along its first dimension; 0 = the model has no batch dimension. */
  maxBatchSize: z
    .number()
    .int()
    .min(0)
    .default(0)
    .describe('Largest batch the model takes along its first dimension; 0 = the model has no batch dimension.'),
  batching: BatchingSchema.default(BatchingSchema.parse({})).describe(
    "The dynamic batcher and queue policy (Triton's dynamic_batching).",
  ),
  instances: InstancesSchema.default(InstancesSchema.parse({})).describe('Where and how the model runs.'),
  scaling: ScalingSchema.default(ScalingSchema.parse({})).describe(
    'The autoscaler: instances from queue depth, scale to zero.',
  ),
  execution: ExecutionSchema.default(ExecutionSchema.parse({})).describe('How LibTorch runs forward.'),
  limits: LimitsSchema.default(LimitsSchema.parse({})).describe(
    'What one call may take: hook time and memory, runner memory, forward time.',
  ),
  /** Secrets (`hearth secrets set NAME`) this function's hook reads as `ctx.secrets.NAME`; no other function sees them. */
  secrets: z
    .array(
      z
        .string()
        .regex(
          SECRET_NAME,
          'a secret name is upper case letters, digits and _, starting with a letter or _ (at most 64)',
        ),
    )
    .max(64)
    .default([])
    .describe(
      "Secrets (`hearth secrets set NAME`) the hook reads as ctx.secrets.NAME; only this function's hook sees them.",
    ),
  /** Stateful models: requests name a sequence (Triton's sequence_batching). */
  sequence: SequenceSchema.optional().describe(
    "Stateful models: requests name a sequence that stays on one instance (Triton's sequence_batching).",
  ),
  /** Samples run at load instead of the default zero passes (Triton's model_warmup). */
  warmup: z
    .array(WarmupSchema)
    .max(64)
    .optional()
    .describe("Samples run at load instead of the default passes of zeros (Triton's model_warmup)."),
  /**
   * The smoke request: a JSON body a new version must answer through pre → forward → post before
   * any traffic moves to it; one that fails marks the version failed, and traffic stays put.
   */
  example: z
    .json()
    .refine((v) => JSON.stringify(v).length <= 1 << 20, 'must be at most 1 MiB of JSON')
    .optional()
    .describe(
      'A request body (JSON) a new version must answer through pre → forward → post before it takes traffic (a smoke request); failing it fails the deploy.',
    ),
  /**
   * The smoke request from a file next to the spec (an image, a CSV row): its bytes are the body,
   * sent with exampleContentType (default: by its extension). `hearth deploy` uploads it.
   */
  exampleFile: relativePath
    .optional()
    .describe(
      'The smoke request from a file next to the spec (an image, a text row): its bytes are the body a new version must answer before it takes traffic; the deploy uploads it.',
    ),
  /** The content type the example file is sent with (default: by its extension). */
  exampleContentType: z
    .string()
    .regex(/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/, 'must be a media type such as image/png')
    .max(200)
    .optional()
    .describe('The content type exampleFile is sent with (default: by its extension, else application/octet-stream).'),
  /** A Triton config's `parameters`, kept as given (the ones Hearth reads also set execution/instances). */
  parameters: z
    .record(z.string(), z.string())
    .optional()
    .describe(
      "A Triton config's parameters, as given; those the PyTorch backend reads are also applied (execution, instances.threads).",
    ),
});

type SpecFields = z.output<typeof FunctionSpecFields>;
/** One rule across a spec's fields: adds an issue (path and message) where the spec breaks it. */
type SpecCheck = (spec: SpecFields, ctx: z.RefinementCtx<SpecFields>) => void;

/** A tensor is named once among the inputs, and once among the outputs. */
const uniqueTensorNames: SpecCheck = (spec, ctx) => {
  const unique = (list: { name: string }[], where: 'inputs' | 'outputs'): void => {
    const seen = new Set<string>();
    list.forEach((t, i) => {
      if (seen.has(t.name))
        ctx.addIssue({ code: 'custom', path: [where, i, 'name'], message: `"${t.name}" is named twice` });
      seen.add(t.name);
    });
  };
  unique(spec.inputs, 'inputs');
  unique(spec.outputs, 'outputs');
};

/** The smoke request is a JSON body or a file, not both; its content type goes with a file. */
const oneSmokeRequest: SpecCheck = (spec, ctx) => {
  if (spec.example !== undefined && spec.exampleFile !== undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['exampleFile'],
      message: 'give the smoke request as example (a JSON body) or exampleFile (a file), not both',
    });
  if (spec.exampleContentType !== undefined && spec.exampleFile === undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['exampleContentType'],
      message: 'is the content type of exampleFile: give one',
    });
};

/** A reshape has at most one -1, and holds as many elements as the dims it reshapes. */
const reshapesFit: SpecCheck = (spec, ctx) => {
  for (const where of ['inputs', 'outputs'] as const) {
    spec[where].forEach((t, i) => {
      if (!t.reshape) return;
      const free = t.reshape.filter((d) => d === -1).length;
      if (free > 1) ctx.addIssue({ code: 'custom', path: [where, i, 'reshape'], message: 'may have at most one -1' });
      const count = (dims: number[]) => dims.reduce((n, d) => n * d, 1);
      if (free === 0 && !t.dims.includes(-1) && count(t.dims) !== count(t.reshape)) {
        ctx.addIssue({
          code: 'custom',
          path: [where, i, 'reshape'],
          message: `[${t.reshape.join(', ')}] holds ${count(t.reshape)} element(s) but dims [${t.dims.join(', ')}] hold ${count(t.dims)}`,
        });
      }
    });
  }
};

/** Preferred batch sizes need a batch dimension, and fit in maxBatchSize. */
const preferredBatchSizesFit: SpecCheck = (spec, ctx) => {
  spec.batching.preferredBatchSizes.forEach((size, i) => {
    if (spec.maxBatchSize === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['batching', 'preferredBatchSizes', i],
        message: 'needs maxBatchSize > 0 (the model has no batch dimension)',
      });
    } else if (size > spec.maxBatchSize) {
      ctx.addIssue({
        code: 'custom',
        path: ['batching', 'preferredBatchSizes', i],
        message: `${size} is larger than maxBatchSize (${spec.maxBatchSize})`,
      });
    }
  });
};

/** A sequence's control inputs are filled by the batcher: none is also a client input. */
const controlsAreNotInputs: SpecCheck = (spec, ctx) => {
  spec.sequence?.controls.forEach((c, i) => {
    if (spec.inputs.some((t) => t.name === c.name))
      ctx.addIssue({
        code: 'custom',
        path: ['sequence', 'controls', i, 'name'],
        message: `"${c.name}" is also a client input; a control input is filled by the batcher`,
      });
  });
};

/** A sequence's state inputs and outputs are the node's own: none is also an input, a control or an output. */
const statesAreTheNodes: SpecCheck = (spec, ctx) => {
  const inputNames = new Set([
    ...spec.inputs.map((t) => t.name),
    ...(spec.sequence?.controls.map((c) => c.name) ?? []),
  ]);
  const outputNames = new Set(spec.outputs.map((t) => t.name));
  spec.sequence?.states.forEach((state, i) => {
    if (inputNames.has(state.input))
      ctx.addIssue({
        code: 'custom',
        path: ['sequence', 'states', i, 'input'],
        message: `"${state.input}" is also an input or a control input; a state input is filled by the node`,
      });
    inputNames.add(state.input);
    if (outputNames.has(state.output))
      ctx.addIssue({
        code: 'custom',
        path: ['sequence', 'states', i, 'output'],
        message: `"${state.output}" is also an output; a state output is kept by the node, not answered`,
      });
    outputNames.add(state.output);
  });
};

/** A warm-up sample gives exactly the model's inputs, in a batch that fits maxBatchSize. */
const warmupMatchesInputs: SpecCheck = (spec, ctx) => {
  spec.warmup?.forEach((sample, i) => {
    const names = Object.keys(sample.inputs).sort();
    const wanted = spec.inputs.map((t) => t.name).sort();
    if (names.join('\0') !== wanted.join('\0'))
      ctx.addIssue({
        code: 'custom',
        path: ['warmup', i, 'inputs'],
        message: `must give exactly the model's inputs (${wanted.join(', ')}); got ${names.join(', ') || 'none'}`,
      });
    if (spec.maxBatchSize > 0 && sample.batchSize > spec.maxBatchSize)
      ctx.addIssue({
        code: 'custom',
        path: ['warmup', i, 'batchSize'],
        message: `${sample.batchSize} is larger than maxBatchSize (${spec.maxBatchSize})`,
      });
  });
};

/** gpuMemory caps a CUDA device: not with a cpu or model device. */
const gpuMemoryNeedsCuda: SpecCheck = (spec, ctx) => {
  if (spec.instances.gpuMemory !== undefined && /^(cpu|model)$/.test(spec.instances.device)) {
    ctx.addIssue({
      code: 'custom',
      path: ['instances', 'gpuMemory'],
      message: `caps a CUDA device's memory, and instances.device is ${spec.instances.device}`,
    });
  }
};

/** The instances a pool starts with are within the autoscaler's ceiling. */
const countWithinMax: SpecCheck = (spec, ctx) => {
  if (spec.instances.count > spec.scaling.maxInstances) {
    ctx.addIssue({
      code: 'custom',
      path: ['instances', 'count'],
      message: `${spec.instances.count} is more than scaling.maxInstances (${spec.scaling.maxInstances})`,
    });
  }
};

/** The rules across fields, in the order their issues are reported. */
const SPEC_CHECKS: readonly SpecCheck[] = [
  uniqueTensorNames,
  oneSmokeRequest,
  reshapesFit,
  preferredBatchSizesFit,
  controlsAreNotInputs,
  statesAreTheNodes,
  warmupMatchesInputs,
  gpuMemoryNeedsCuda,
  countWithinMax,
];

export const FunctionSpecSchema = FunctionSpecFields.superRefine((spec, ctx) => {
  for (const check of SPEC_CHECKS) check(spec, ctx);
});

/** A spec as written (defaults optional). */
export type FunctionSpecInput = z.input<typeof FunctionSpecSchema>;
/** A validated spec with every default filled in. */
export type FunctionSpec = z.output<typeof FunctionSpecSchema>;
export type TensorSpec = z.output<typeof TensorSpecSchema>;
export type InputSpec = z.output<typeof InputSpecSchema>;
export type OutputSpec = z.output<typeof OutputSpecSchema>;
export type SequenceSpec = z.output<typeof SequenceSchema>;
export type SequenceControl = z.output<typeof SequenceControlSchema>;

const EXAMPLE_TYPES: Record<string, string> = {
  json: 'application/json',
  txt: 'text/plain',
  csv: 'text/csv',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  wav: 'audio/wav',
  npy: 'application/x-npy',
};

/** The content type a spec's exampleFile is sent with: exampleContentType, else by its extension. */
export function exampleFileType(spec: Pick<FunctionSpec, 'exampleFile' | 'exampleContentType'>): string {
  if (spec.exampleContentType) return spec.exampleContentType;
  const ext = spec.exampleFile?.split('.').pop()?.toLowerCase() ?? '';
  return EXAMPLE_TYPES[ext] ?? 'application/octet-stream';
}

/** The largest exampleFile a smoke request sends (the CLI refuses a larger one before uploading). */
export const MAX_EXAMPLE_BYTES = 32 << 20;

/**
 * An example file as it is uploaded: a line naming the function, then the file's bytes. The node
 * sends a version only an example made for its own function (never another function's artifact,
 * which a deploy could otherwise name by its sha256 and read back through its own hook).
 */
export function exampleArtifact(name: string, bytes: Uint8Array): Uint8Array {
  const head = new TextEncoder().encode(`hearth-example:${name}\n`);
  const out = new Uint8Array(head.length + bytes.length);
  out.set(head);
  out.set(bytes, head.length);
  return out;
}

/** The example file's bytes from its artifact, or undefined if the artifact was not made for `name`. */
export function exampleFromArtifact(name: string, artifact: Uint8Array): Uint8Array | undefined {
  const head = new TextEncoder().encode(`hearth-example:${name}\n`);
  if (artifact.length < head.length) return undefined;
  for (let i = 0; i < head.length; i++) if (artifact[i] !== head[i]) return undefined;
  return artifact.subarray(head.length);
}
