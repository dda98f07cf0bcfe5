/**
 * Triton model folders: config.pbtxt (platform pytorch_libtorch) plus `<version>/model.pt`,
 * converted to a Hearth function spec. Every field either maps onto the spec, is accepted with a
 * note saying it has no effect here, or is refused with an error that names it: a config is never
 * half-honoured in silence.
 */
import { InvalidInputError } from '../../errors.js';
import type { FunctionSpec, FunctionSpecInput } from '../function-spec.js';
import { FUNCTION_NAME, FUNCTION_NAME_RULE } from '../function-spec.js';
import { parseSpec } from '../parse.js';
import type { DType } from '../../tensor.js';
import { DATA_TYPES, Fields } from './fields.js';
import type { VersionPolicy } from './version-policy.js';
import { readVersionPolicy } from './version-policy.js';
import { applyParameters } from './parameters.js';
import { readSequenceBatching } from './sequence-batching.js';
import type { TextMessage } from './text-format.js';
import { parseTextFormat, TextFormatError } from './text-format.js';

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

export function tritonConfigToInput(
  text: string,
  options: TritonConvertOptions,
): FunctionSpecInput & { versionPolicy?: VersionPolicy } {
  let message: TextMessage;
  try {
    message = parseTextFormat(text);
  } catch (cause) {
    if (cause instanceof TextFormatError) throw new InvalidInputError(`config.pbtxt: ${cause.message}`, { cause });
    throw cause;
  }
  return tritonMessageToInput(message, options);
}

/** A model configuration already read (from config.pbtxt's text, or from its JSON: ./json-config.ts). */
export function tritonMessageToInput(
  message: TextMessage,
  options: TritonConvertOptions,
): FunctionSpecInput & { versionPolicy?: VersionPolicy } {
  const notes = options.notes ?? [];
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
