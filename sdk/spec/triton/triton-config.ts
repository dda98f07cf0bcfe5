/**
 * Triton model folders: config.pbtxt (platform pytorch_libtorch) plus `<version>/model.pt`,
 * converted to a Hearth function spec. Every field either maps onto the spec, is accepted with a
 * note saying it has no effect here, or is refused with an error that names it: a config is never
 * half-honoured in silence.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join, normalize } from 'node:path';

import { InvalidInputError } from '../../errors.js';
import type { DType } from '../../tensor.js';
import type { FunctionSpec, FunctionSpecInput } from '../function-spec.js';
import { FUNCTION_NAME, FUNCTION_NAME_RULE } from '../function-spec.js';
import { parseSpec } from '../parse.js';
import type { TextMessage, TextValue } from './text-format.js';
import { parseTextFormat, TextFormatError } from './text-format.js';

/** Triton's TYPE_* names → KServe datatypes (TYPE_STRING is BYTES). */
export const DATA_TYPES: Record<string, DType> = {
  TYPE_BOOL: 'BOOL',
  TYPE_UINT8: 'UINT8',
  TYPE_UINT16: 'UINT16',
  TYPE_UINT32: 'UINT32',
  TYPE_UINT64: 'UINT64',
  TYPE_INT8: 'INT8',
  TYPE_INT16: 'INT16',
  TYPE_INT32: 'INT32',
  TYPE_INT64: 'INT64',
  TYPE_FP16: 'FP16',
  TYPE_FP32: 'FP32',
  TYPE_FP64: 'FP64',
  TYPE_BF16: 'BF16',
  TYPE_STRING: 'BYTES',
};

function enumOf(v: TextValue): string | undefined {
  return typeof v === 'object' && typeof v.enum === 'string' ? v.enum : undefined;
}

/** Reads one message's fields, refusing any it does not know. */
class Fields {
  private readonly used = new Set<string>();
  constructor(
    private readonly fields: TextMessage,
    private readonly where: string,
  ) {}

  private fail(field: string, why: string): never {
    throw new InvalidInputError(`config.pbtxt: ${this.path(field)} ${why}`, { reason: this.path(field) });
  }

  path(field: string): string {
    return this.where ? `${this.where}.${field}` : field;
  }

  all(field: string): TextValue[] {
    this.used.add(field);
    return this.fields[field] ?? [];
  }

  one(field: string): TextValue | undefined {
    const values = this.all(field);
    if (values.length > 1) this.fail(field, 'is given more than once');
    return values[0];
  }

  number(field: string): number | undefined {
    const v = this.one(field);
    if (v !== undefined && typeof v !== 'number') this.fail(field, 'must be a number');
    return v;
  }

  numbers(field: string): number[] {
    return this.all(field).map((v) => (typeof v === 'number' ? v : this.fail(field, 'must be a list of numbers')));
  }

  string(field: string): string | undefined {
    const v = this.one(field);
    if (v !== undefined && typeof v !== 'string') this.fail(field, 'must be a string');
    return v;
  }

  bool(field: string): boolean | undefined {
    const v = this.one(field);
    if (v !== undefined && typeof v !== 'boolean') this.fail(field, 'must be true or false');
    return v;
  }

  enumValue(field: string): string | undefined {
    const v = this.one(field);
    if (v === undefined) return undefined;
    return enumOf(v) ?? this.fail(field, 'must be an enum value');
  }

  messages(field: string): Fields[] {
    return this.all(field).map((v, i) =>
      typeof v === 'object' && enumOf(v) === undefined
        ? new Fields(v as TextMessage, `${this.path(field)}[${i}]`)
        : this.fail(field, 'must be a message'),
    );
  }

  message(field: string): Fields | undefined {
    const v = this.one(field);
    if (v === undefined) return undefined;
    if (typeof v !== 'object' || enumOf(v) !== undefined) this.fail(field, 'must be a message');
    return new Fields(v as TextMessage, this.path(field));
  }

  /** Refuses a field that is present and not equal to a value Hearth can honour. */
  refuseUnless(field: string, acceptable: (v: TextValue) => boolean, why: string): void {
    for (const v of this.all(field)) if (!acceptable(v)) this.fail(field, why);
  }

  /** Any field not read so far is one Hearth cannot honour. */
  done(): void {
    for (const field of Object.keys(this.fields)) {
      if (!this.used.has(field))
        this.fail(field, 'is not supported by Hearth; remove it or see the spec reference for what Hearth takes');
    }
  }
}

function tensors(fields: Fields[], kind: 'input' | 'output'): FunctionSpecInput['inputs'] {
  return fields.map((f) => {
    const name = f.string('name');
    const dataType = f.enumValue('data_type');
    if (!name) throw new InvalidInputError(`config.pbtxt: ${f.path('name')} is required`);
    const dtype = dataType === undefined ? undefined : DATA_TYPES[dataType];
    if (!dtype)
      throw new InvalidInputError(
        `config.pbtxt: ${f.path('data_type')} must be one of ${Object.keys(DATA_TYPES).join(', ')}`,
      );
    const dims = f.numbers('dims');
    let labelFile: string | undefined;
    let format: string | undefined;
    if (kind === 'input') {
      format = f.enumValue('format');
      if (format !== undefined && !['FORMAT_NONE', 'FORMAT_NCHW', 'FORMAT_NHWC'].includes(format))
        throw new InvalidInputError(
          `config.pbtxt: ${f.path('format')} must be FORMAT_NONE, FORMAT_NCHW or FORMAT_NHWC`,
          { reason: f.path('format') },
        );
      f.refuseUnless('optional', (v) => v === false, 'optional inputs are not supported by Hearth');
      f.refuseUnless('allow_ragged_batch', (v) => v === false, 'ragged batching is not supported by Hearth');
    } else {
      labelFile = f.string('label_filename');
    }
    f.refuseUnless('is_shape_tensor', (v) => v === false, 'shape tensors are not supported by Hearth');
    const reshape = f.message('reshape');
    const shape = reshape?.numbers('shape');
    reshape?.done();
    f.done();
    return {
      name,
      dtype,
      dims,
      ...(shape ? { reshape: shape } : {}),
      ...(labelFile ? { labelFile } : {}),
      ...(format ? { format: format as 'FORMAT_NONE' } : {}),
    };
  });
}

/** The parameters Triton's PyTorch backend reads, applied to the spec; others are kept and noted. */
function applyParameters(top: Fields, spec: FunctionSpecInput, notes: string[]): void {
  const parameters: Record<string, string> = {};
  for (const p of top.messages('parameters')) {
    const key = p.string('key');
    const value = p.message('value');
    const text = value?.string('string_value') ?? '';
    value?.done();
    p.done();
    if (!key) throw new InvalidInputError(`config.pbtxt: ${p.path('key')} is required`);
    parameters[key] = text;
  }
  const keys = Object.keys(parameters);
  if (keys.length === 0) return;
  spec.parameters = parameters;
  const bool = (key: string): boolean | undefined => {
    const v = parameters[key];
    if (v === undefined) return undefined;
    if (/^(true|1|on|yes)$/i.test(v)) return true;
    if (/^(false|0|off|no)$/i.test(v)) return false;
    throw new InvalidInputError(`config.pbtxt: parameters["${key}"] must be "true" or "false", got "${v}"`, {
      reason: 'parameters',
    });
  };
  const execution: NonNullable<FunctionSpecInput['execution']> = {};
  const inference = bool('INFERENCE_MODE');
  if (inference !== undefined) execution.inferenceMode = inference;
  const disableOptimized = bool('DISABLE_OPTIMIZED_EXECUTION');
  if (disableOptimized !== undefined) execution.optimizedExecution = !disableOptimized;
  const executor = bool('ENABLE_JIT_EXECUTOR');
  if (executor !== undefined) execution.jitExecutor = executor;
  const profiling = bool('ENABLE_JIT_PROFILING');
  if (profiling !== undefined) execution.jitProfiling = profiling;
  spec.execution = execution;
  const intra = parameters.INTRA_OP_THREAD_COUNT;
  if (intra !== undefined) {
    const n = Number(intra);
    if (!Number.isInteger(n) || n < 0)
      throw new InvalidInputError(
        `config.pbtxt: parameters["INTRA_OP_THREAD_COUNT"] must be a whole number, got "${intra}"`,
        { reason: 'parameters' },
      );
    spec.instances = { ...spec.instances, threads: n };
  }
  const APPLIED = [
    'INFERENCE_MODE',
    'DISABLE_OPTIMIZED_EXECUTION',
    'ENABLE_JIT_EXECUTOR',
    'ENABLE_JIT_PROFILING',
    'INTRA_OP_THREAD_COUNT',
  ];
  const NO_EFFECT: Record<string, string> = {
    ENABLE_WEIGHT_SHARING: 'instances always share one copy of the weights in Hearth',
    INTER_OP_THREAD_COUNT: 'Hearth runs each forward on its own engine lane; inter-op threads are not used',
    ENABLE_CACHE_CLEANING: 'CUDA cache cleaning between forwards is not done by Hearth',
    DISABLE_CUDNN: 'cuDNN stays as LibTorch sets it',
    ENABLE_TENSOR_FUSER: 'the tensor fuser stays as LibTorch sets it',
    ENABLE_NVFUSER: 'the NVFuser stays as LibTorch sets it',
  };
  for (const key of keys) {
    if (APPLIED.includes(key)) continue;
    notes.push(
      NO_EFFECT[key]
        ? `parameters["${key}"] has no effect: ${NO_EFFECT[key]}`
        : `parameters["${key}"] is not read by Hearth; kept with the spec`,
    );
  }
}

export interface TritonConvertOptions {
  /** Names the model when the config does not. */
  folderName?: string;
  /** The model file when default_model_filename does not name one. */
  modelFile?: string;
  /** Fields accepted with no effect, and parameters kept unread, are said here. */
  notes?: string[];
}

/** Converts config.pbtxt text to a spec. */
export function tritonConfigToSpec(text: string, options: TritonConvertOptions = {}): FunctionSpec {
  return parseSpec(tritonConfigToInput(text, options), 'config.pbtxt');
}

function tritonConfigToInput(
  text: string,
  options: TritonConvertOptions,
): FunctionSpecInput & { versionPolicy?: VersionPolicy } {
  const notes = options.notes ?? [];
  let message: TextMessage;
  try {
    message = parseTextFormat(text);
  } catch (cause) {
    if (cause instanceof TextFormatError) throw new InvalidInputError(`config.pbtxt: ${cause.message}`, { cause });
    throw cause;
  }
  const top = new Fields(message, '');
  const name = top.string('name') ?? options.folderName;
  if (!name) throw new InvalidInputError('config.pbtxt: name is required (or deploy the folder named after the model)');
  if (!FUNCTION_NAME.test(name)) {
    throw new InvalidInputError(
      `config.pbtxt: name "${name}" is not a model name Hearth can serve (${FUNCTION_NAME_RULE})`,
      { reason: 'name' },
    );
  }
  const platform = top.string('platform');
  const backend = top.string('backend');
  if (platform !== undefined && platform !== 'pytorch_libtorch') {
    throw new InvalidInputError(
      `config.pbtxt: platform "${platform}" is not supported; Hearth serves pytorch_libtorch (TorchScript) models`,
      { reason: 'platform' },
    );
  }
  if (backend !== undefined && backend !== 'pytorch') {
    throw new InvalidInputError(
      `config.pbtxt: backend "${backend}" is not supported; Hearth serves the pytorch backend's TorchScript models`,
      { reason: 'backend' },
    );
  }
  // Neither given: Triton picks the backend from the model file; a .pt is the PyTorch backend's.
  const maxBatchSize = top.number('max_batch_size') ?? 0;
  const modelFile = top.string('default_model_filename') ?? options.modelFile ?? 'model.pt';
  const versionPolicy = readVersionPolicy(top.message('version_policy'));

  const spec: FunctionSpecInput & { versionPolicy?: VersionPolicy } = {
    name,
    model: modelFile,
    maxBatchSize,
    inputs: tensors(top.messages('input'), 'input'),
    outputs: tensors(top.messages('output'), 'output'),
    ...(versionPolicy ? { versionPolicy } : {}),
  };

  const groups = top.messages('instance_group');
  if (groups.length > 1) {
    throw new InvalidInputError(
      'config.pbtxt: instance_group has more than one group; Hearth places a pool on one device kind',
      { reason: 'instance_group' },
    );
  }
  const group = groups[0];
  if (group) {
    const count = group.number('count') ?? 1;
    const kind = group.enumValue('kind') ?? 'KIND_AUTO';
    const gpus = group.numbers('gpus');
    group.string('name');
    if (gpus.length > 1) {
      throw new InvalidInputError(
        `config.pbtxt: ${group.path('gpus')} lists ${gpus.length} GPUs; Hearth places a pool's instances on one device`,
        { reason: group.path('gpus') },
      );
    }
    let device: string;
    if (kind === 'KIND_CPU') device = 'cpu';
    else if (kind === 'KIND_GPU') device = gpus.length ? `cuda:${gpus[0]}` : 'cuda';
    else if (kind === 'KIND_AUTO') device = gpus.length ? `cuda:${gpus[0]}` : 'auto';
    else if (kind === 'KIND_MODEL') device = 'model';
    else
      throw new InvalidInputError(
        `config.pbtxt: ${group.path('kind')} ${kind} is not supported; use KIND_CPU, KIND_GPU, KIND_AUTO or KIND_MODEL`,
        { reason: group.path('kind') },
      );
    group.done();
    spec.instances = { count, device };
    spec.scaling = { maxInstances: Math.max(4, count) };
  }
  applyParameters(top, spec, notes);

  const dynamic = top.message('dynamic_batching');
  if (dynamic) {
    const policy = dynamic.message('default_queue_policy');
    const levels = dynamic.number('priority_levels') ?? 0;
    const defaultLevel = dynamic.number('default_priority_level') ?? 0;
    dynamic.bool('preserve_ordering'); // responses are per request: order is always preserved per caller
    spec.batching = {
      preferredBatchSizes: dynamic.numbers('preferred_batch_size'),
      maxQueueDelayUs: dynamic.number('max_queue_delay_microseconds') ?? 0,
      priorityLevels: Math.max(1, levels),
      defaultPriorityLevel: Math.max(1, defaultLevel),
    };
    if (policy) {
      const action = policy.enumValue('timeout_action') ?? 'REJECT';
      if (action !== 'REJECT') {
        throw new InvalidInputError(
          `config.pbtxt: ${policy.path('timeout_action')} ${action} is not supported; Hearth rejects requests whose timeout passes (REJECT)`,
          { reason: policy.path('timeout_action') },
        );
      }
      policy.bool('allow_timeout_override'); // a request's own deadline always applies
      spec.batching.defaultTimeoutUs = policy.number('default_timeout_microseconds') ?? 0;
      spec.batching.maxQueueSize = policy.number('max_queue_size') ?? 0;
      policy.done();
    }
    dynamic.done();
  }

  const sequence = top.message('sequence_batching');
  if (sequence) spec.sequence = readSequenceBatching(sequence);

  const warmup = top.messages('model_warmup').map((w) => {
    const inputs: Record<string, { dtype: DType; dims: number[]; fill: 'zero' | 'random' }> = {};
    for (const entry of w.messages('inputs')) {
      const key = entry.string('key');
      const value = entry.message('value');
      entry.done();
      if (!key || !value) throw new InvalidInputError(`config.pbtxt: ${entry.path('key')} and value are required`);
      const dataType = value.enumValue('data_type');
      const dtype = dataType === undefined ? undefined : DATA_TYPES[dataType];
      if (!dtype)
        throw new InvalidInputError(
          `config.pbtxt: ${value.path('data_type')} must be one of ${Object.keys(DATA_TYPES).join(', ')}`,
        );
      const dims = value.numbers('dims');
      const zero = value.bool('zero_data');
      const random = value.bool('random_data');
      value.refuseUnless(
        'input_data_file',
        () => false,
        'warm-up data files are not supported by Hearth; use zero_data or random_data',
      );
      value.done();
      inputs[key] = { dtype, dims, fill: random ? 'random' : zero === false ? 'random' : 'zero' };
    }
    const sample = {
      name: w.string('name') ?? 'warmup',
      batchSize: Math.max(1, w.number('batch_size') ?? 1),
      count: Math.max(1, w.number('count') ?? 1),
      inputs,
    };
    w.done();
    return sample;
  });
  if (warmup.length > 0) spec.warmup = warmup;

  // Accepted, with a note naming what has no effect.
  const optimization = top.one('optimization');
  if (optimization !== undefined) {
    const fields =
      typeof optimization === 'object' ? Object.keys(optimization).map((k) => `optimization.${k}`) : ['optimization'];
    notes.push(
      `${fields.join(', ') || 'optimization'} has no effect: Hearth runs the TorchScript model as saved (no TensorRT/OpenVINO accelerators, CUDA graphs or pinned-memory settings)`,
    );
  }
  for (const field of ['response_cache', 'cc_model_filenames', 'metric_tags', 'model_operations']) {
    if (top.all(field).length > 0) notes.push(`${field} has no effect in Hearth`);
  }
  top.refuseUnless(
    'model_transaction_policy',
    (v) => typeof v === 'object' && !('enum' in v) && (v as TextMessage).decoupled?.[0] !== true,
    'decoupled models are not supported by Hearth',
  );
  top.done();
  return spec;
}

const CONTROL_KINDS: Record<string, 'start' | 'end' | 'ready' | 'corrid'> = {
  CONTROL_SEQUENCE_START: 'start',
  CONTROL_SEQUENCE_END: 'end',
  CONTROL_SEQUENCE_READY: 'ready',
  CONTROL_SEQUENCE_CORRID: 'corrid',
};

/** sequence_batching: strategy, idle time, control inputs; implicit state is refused by name. */
function readSequenceBatching(f: Fields): NonNullable<FunctionSpecInput['sequence']> {
  const out: NonNullable<FunctionSpecInput['sequence']> = { controls: [] };
  const idle = f.number('max_sequence_idle_microseconds');
  if (idle !== undefined && idle > 0) out.maxSequenceIdleUs = idle;
  for (const input of f.messages('control_input')) {
    const name = input.string('name');
    if (!name) throw new InvalidInputError(`config.pbtxt: ${input.path('name')} is required`);
    for (const control of input.messages('control')) {
      const kindName = control.enumValue('kind') ?? 'CONTROL_SEQUENCE_START';
      const kind = CONTROL_KINDS[kindName];
      if (!kind)
        throw new InvalidInputError(`config.pbtxt: ${control.path('kind')} ${kindName} is not supported`, {
          reason: control.path('kind'),
        });
      const int32 = control.numbers('int32_false_true');
      const fp32 = control.numbers('fp32_false_true');
      const bools = control.all('bool_false_true').map((v) => (v === true ? 1 : 0));
      const dataType = control.enumValue('data_type');
      control.done();
      if (kind === 'corrid') {
        const dtype = dataType === undefined ? undefined : DATA_TYPES[dataType];
        if (dtype !== 'INT64' && dtype !== 'INT32') {
          throw new InvalidInputError(
            `config.pbtxt: ${control.path('data_type')} of a CORRID control must be TYPE_INT64 or TYPE_INT32 (TorchScript has no unsigned 64-bit tensors, as in Triton's PyTorch backend)`,
            { reason: control.path('data_type') },
          );
        }
        out.controls!.push({ name, kind, dtype });
      } else {
        const [dtype, values] = int32.length
          ? (['INT32', int32] as const)
          : fp32.length
            ? (['FP32', fp32] as const)
            : bools.length
              ? (['BOOL', bools] as const)
              : ([undefined, []] as const);
        if (!dtype || values.length !== 2)
          throw new InvalidInputError(
            `config.pbtxt: ${control.path('int32_false_true')} (or fp32_/bool_false_true) must give the false and true values`,
            { reason: control.path('int32_false_true') },
          );
        out.controls!.push({ name, kind, dtype, values: [values[0]!, values[1]!] });
      }
    }
    input.done();
  }
  const direct = f.message('direct');
  const oldest = f.message('oldest');
  if (oldest) {
    out.strategy = 'oldest';
    const candidates = oldest.number('max_candidate_sequences');
    if (candidates) out.maxCandidateSequences = candidates;
    out.maxQueueDelayUs = oldest.number('max_queue_delay_microseconds') ?? 0;
    oldest.numbers('preferred_batch_size');
    oldest.bool('preserve_ordering');
    oldest.done();
  } else {
    out.strategy = 'direct';
    out.maxQueueDelayUs = direct?.number('max_queue_delay_microseconds') ?? 0;
    direct?.number('minimum_slot_utilization');
    direct?.done();
  }
  f.refuseUnless(
    'state',
    () => false,
    'implicit state is not supported by Hearth; keep the state in the model (its module attributes) and use the control inputs',
  );
  f.refuseUnless('iterative_sequence', (v) => v === false, 'iterative sequences are not supported by Hearth');
  f.done();
  return out;
}

/** Triton's version_policy: which numbered version folders are served. */
export type VersionPolicy = { latest: number } | { all: true } | { specific: number[] };

function readVersionPolicy(f: Fields | undefined): VersionPolicy | undefined {
  if (!f) return undefined;
  const latest = f.message('latest');
  const all = f.message('all');
  const specific = f.message('specific');
  let policy: VersionPolicy;
  if (latest) {
    policy = { latest: latest.number('num_versions') ?? 1 };
    latest.done();
  } else if (all) {
    policy = { all: true };
    all.done();
  } else if (specific) {
    policy = { specific: specific.numbers('versions') };
    specific.done();
  } else {
    policy = { latest: 1 };
  }
  f.done();
  return policy;
}

export interface TritonModelFolder {
  spec: FunctionSpec;
  /** The folder. */
  dir: string;
  /** The version whose model file the spec names ("1/model.pt"). */
  version: number;
  /** What the import decided or could not honour, for the deploy's output. */
  notes: string[];
}

/** A file name from a config, checked to stay inside the model folder. */
function inside(dir: string, file: string, field: string): string {
  const clean = normalize(file);
  if (clean.startsWith('..') || clean.startsWith('/'))
    throw new InvalidInputError(`config.pbtxt: ${field} "${file}" must name a file inside the model folder`, {
      reason: field,
    });
  return join(dir, clean);
}

/**
 * Reads a Triton model folder: config.pbtxt, the version folder its version_policy serves (the
 * highest by default), the model file in it (default_model_filename, else model.pt, else the one
 * .pt file there), and label files.
 */
export async function loadTritonModelFolder(dir: string): Promise<TritonModelFolder> {
  let text: string;
  try {
    text = await readFile(join(dir, 'config.pbtxt'), 'utf8');
  } catch (cause) {
    throw new InvalidInputError(`${dir} has no readable config.pbtxt`, { cause });
  }
  const notes: string[] = [];
  const input = tritonConfigToInput(text, { folderName: basename(dir), notes });
  const { versionPolicy, ...specInput } = input;
  const named = /default_model_filename/.test(text);
  const numbered = (await readdir(dir))
    .filter((e) => /^\d+$/.test(e))
    .map(Number)
    .sort((a, b) => b - a);
  // A version folder is available when it holds the model file: default_model_filename, else
  // model.pt, else (seed layouts such as 1/resnet50.pt) its only .pt file, said in the notes.
  const files = new Map<number, string>();
  for (const v of numbered) {
    const versionDir = join(dir, String(v));
    if (
      await stat(inside(versionDir, specInput.model, 'default_model_filename')).then(
        (s) => s.isFile(),
        () => false,
      )
    ) {
      files.set(v, specInput.model);
    } else if (!named) {
      const pts = (await readdir(versionDir).catch(() => [] as string[])).filter((f) => /\.pt$/.test(f));
      if (pts.length === 1) files.set(v, pts[0]!);
    }
  }
  const available = [...files.keys()];
  if (available.length === 0)
    throw new InvalidInputError(
      `${dir} has no <version>/${specInput.model} (versions found: ${numbered.join(', ') || 'none'})`,
    );
  const served = servedVersions(versionPolicy ?? { latest: 1 }, available);
  if (served.length === 0)
    throw new InvalidInputError(
      `config.pbtxt: version_policy serves none of the versions with a model file (${available.join(', ')})`,
      { reason: 'version_policy' },
    );
  if (served.length > 1) {
    throw new InvalidInputError(
      `config.pbtxt: version_policy serves versions ${served.join(', ')}; a Hearth deploy serves one version folder — deploy them one at a time (each becomes a Hearth version) or use latest { num_versions: 1 }`,
      { reason: 'version_policy' },
    );
  }
  const version = served[0]!;
  const model = files.get(version)!;
  if (model !== specInput.model)
    notes.push(
      `serving ${version}/${model}: the only .pt file in ${version}/ (Triton looks for model.pt; set default_model_filename: "${model}" to say so)`,
    );
  for (const output of specInput.outputs) {
    if (!output.labelFile) continue;
    const path = inside(dir, output.labelFile, `output "${output.name}" label_filename`);
    const labels = await readFile(path, 'utf8').catch((cause: unknown) => {
      throw new InvalidInputError(
        `config.pbtxt: output "${output.name}" label_filename "${output.labelFile}" cannot be read`,
        { cause },
      );
    });
    output.labels = labels.split(/\r?\n/);
    if (output.labels.at(-1) === '') output.labels.pop();
  }
  if (numbered.length > 1)
    notes.unshift(
      `serving version folder ${version} of ${numbered.join(', ')}${versionPolicy ? ' (version_policy)' : ' (the latest)'}`,
    );
  return { spec: parseSpec({ ...specInput, model: `${version}/${model}` }, 'config.pbtxt'), dir, version, notes };
}

/** The version folders a policy serves, highest first. */
export function servedVersions(policy: VersionPolicy, available: readonly number[]): number[] {
  const sorted = [...available].sort((a, b) => b - a);
  if ('all' in policy) return sorted;
  if ('specific' in policy) return sorted.filter((v) => policy.specific.includes(v));
  return sorted.slice(0, Math.max(1, policy.latest));
}
