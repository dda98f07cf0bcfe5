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
import { readDynamicBatching } from './dynamic-batching.js';
import { DATA_TYPES, Fields } from './fields.js';
import { applyInstanceGroup } from './instance-group.js';
import { readModelWarmup } from './model-warmup.js';
import { applyParameters } from './parameters.js';
import { readSequenceBatching } from './sequence-batching.js';
import type { TextMessage } from './text-format.js';
import { parseTextFormat, TextFormatError } from './text-format.js';
import type { VersionPolicy } from './version-policy.js';
import { readVersionPolicy } from './version-policy.js';

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
  const name = readModelName(top, options);
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
  applyInstanceGroup(top, spec);
  applyParameters(top, spec, notes);
  const batching = readDynamicBatching(top);
  if (batching) spec.batching = batching;
  const sequence = top.message('sequence_batching');
  if (sequence) spec.sequence = readSequenceBatching(sequence);
  const warmup = readModelWarmup(top);
  if (warmup.length > 0) spec.warmup = warmup;
  noteWithoutEffect(top, notes);
  top.refuseUnless(
    'model_transaction_policy',
    (v) => typeof v === 'object' && !('enum' in v) && (v as TextMessage).decoupled?.[0] !== true,
    'decoupled models are not supported by Hearth',
  );
  top.done();
  return spec;
}

/** The model's name (the config's, else the folder's), and a platform and backend Hearth serves. */
function readModelName(top: Fields, options: TritonConvertOptions): string {
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
  return name;
}

/** Fields accepted, with a note naming what has no effect here. */
function noteWithoutEffect(top: Fields, notes: string[]): void {
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
}
