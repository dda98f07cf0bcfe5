/**
 * Triton model folders: config.pbtxt (platform pytorch_libtorch) plus `<version>/model.pt`,
 * converted to a Hearth function spec. Every field either maps onto the spec or is refused with an
 * error that names it: a config is never half-honoured in silence.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';

import { InvalidInputError } from '../../errors.js';
import type { DType } from '../../tensor.js';
import type { FunctionSpec, FunctionSpecInput } from '../function-spec.js';
import { FUNCTION_NAME } from '../function-spec.js';
import { parseSpec } from '../parse.js';
import type { TextMessage, TextValue } from './text-format.js';
import { parseTextFormat, TextFormatError } from './text-format.js';

const DATA_TYPES: Record<string, DType> = {
  TYPE_BOOL: 'BOOL', TYPE_UINT8: 'UINT8', TYPE_UINT16: 'UINT16', TYPE_UINT32: 'UINT32', TYPE_UINT64: 'UINT64',
  TYPE_INT8: 'INT8', TYPE_INT16: 'INT16', TYPE_INT32: 'INT32', TYPE_INT64: 'INT64',
  TYPE_FP16: 'FP16', TYPE_FP32: 'FP32', TYPE_FP64: 'FP64', TYPE_BF16: 'BF16', TYPE_STRING: 'BYTES',
};

function enumOf(v: TextValue): string | undefined {
  return typeof v === 'object' && typeof v.enum === 'string' ? v.enum : undefined;
}

/** Reads one message's fields, refusing any it does not know. */
class Fields {
  private readonly used = new Set<string>();
  constructor(private readonly fields: TextMessage, private readonly where: string) {}

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
      typeof v === 'object' && enumOf(v) === undefined ? new Fields(v as TextMessage, `${this.path(field)}[${i}]`) : this.fail(field, 'must be a message'),
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
      if (!this.used.has(field)) this.fail(field, 'is not supported by Hearth; remove it or see the spec reference for what Hearth takes');
    }
  }
}

function tensors(fields: Fields[], kind: 'input' | 'output'): FunctionSpecInput['inputs'] {
  return fields.map((f) => {
    const name = f.string('name');
    const dataType = f.enumValue('data_type');
    if (!name) throw new InvalidInputError(`config.pbtxt: ${f.path('name')} is required`);
    const dtype = dataType === undefined ? undefined : DATA_TYPES[dataType];
    if (!dtype) throw new InvalidInputError(`config.pbtxt: ${f.path('data_type')} must be one of ${Object.keys(DATA_TYPES).join(', ')}`);
    const dims = f.numbers('dims');
    if (kind === 'input') {
      f.refuseUnless('format', (v) => ['FORMAT_NONE', 'FORMAT_NCHW', 'FORMAT_NHWC'].includes(enumOf(v) ?? ''), 'must be FORMAT_NONE, FORMAT_NCHW or FORMAT_NHWC');
      f.refuseUnless('optional', (v) => v === false, 'optional inputs are not supported by Hearth');
      f.refuseUnless('allow_ragged_batch', (v) => v === false, 'ragged batching is not supported by Hearth');
    }
    f.refuseUnless('is_shape_tensor', (v) => v === false, 'shape tensors are not supported by Hearth');
    f.done();
    return { name, dtype, dims };
  });
}

/** Converts config.pbtxt text to a spec. `folderName` names the model when the config does not. */
export function tritonConfigToSpec(text: string, options: { folderName?: string; modelFile?: string } = {}): FunctionSpec {
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
    const suggestion = name.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 63);
    throw new InvalidInputError(`config.pbtxt: name "${name}" is not a DNS label (lowercase letters, digits, "-"); rename the model, e.g. "${suggestion}"`, { reason: 'name' });
  }
  const platform = top.string('platform');
  const backend = top.string('backend');
  if (platform !== undefined && platform !== 'pytorch_libtorch') {
    throw new InvalidInputError(`config.pbtxt: platform "${platform}" is not supported; Hearth serves pytorch_libtorch (TorchScript) models`, { reason: 'platform' });
  }
  if (backend !== undefined && backend !== 'pytorch') {
    throw new InvalidInputError(`config.pbtxt: backend "${backend}" is not supported; Hearth serves the pytorch backend's TorchScript models`, { reason: 'backend' });
  }
  if (platform === undefined && backend === undefined) {
    throw new InvalidInputError('config.pbtxt: platform is required (pytorch_libtorch)', { reason: 'platform' });
  }
  const maxBatchSize = top.number('max_batch_size') ?? 0;
  const modelFile = top.string('default_model_filename') ?? options.modelFile ?? 'model.pt';
  const versionPolicy = top.message('version_policy');
  if (versionPolicy) {
    const latest = versionPolicy.message('latest');
    if (!latest || (latest.number('num_versions') ?? 1) !== 1) {
      throw new InvalidInputError('config.pbtxt: version_policy must be latest { num_versions: 1 }; Hearth versions functions itself', { reason: 'version_policy' });
    }
    latest.done();
    versionPolicy.done();
  }

  const spec: FunctionSpecInput = {
    name,
    model: modelFile,
    maxBatchSize,
    inputs: tensors(top.messages('input'), 'input'),
    outputs: tensors(top.messages('output'), 'output'),
  };

  const groups = top.messages('instance_group');
  if (groups.length > 1) {
    throw new InvalidInputError('config.pbtxt: instance_group has more than one group; Hearth places a pool on one device kind', { reason: 'instance_group' });
  }
  const group = groups[0];
  if (group) {
    const count = group.number('count') ?? 1;
    const kind = group.enumValue('kind') ?? 'KIND_AUTO';
    const gpus = group.numbers('gpus');
    group.string('name');
    if (gpus.length > 1) {
      throw new InvalidInputError(`config.pbtxt: ${group.path('gpus')} lists ${gpus.length} GPUs; Hearth places a pool's instances on one device`, { reason: group.path('gpus') });
    }
    let device: string;
    if (kind === 'KIND_CPU') device = 'cpu';
    else if (kind === 'KIND_GPU') device = gpus.length ? `cuda:${gpus[0]}` : 'cuda';
    else if (kind === 'KIND_AUTO') device = gpus.length ? `cuda:${gpus[0]}` : 'auto';
    else throw new InvalidInputError(`config.pbtxt: ${group.path('kind')} ${kind} is not supported; use KIND_CPU, KIND_GPU or KIND_AUTO`, { reason: group.path('kind') });
    group.done();
    spec.instances = { count, device };
    spec.scaling = { maxInstances: Math.max(4, count) };
  }

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
        throw new InvalidInputError(`config.pbtxt: ${policy.path('timeout_action')} ${action} is not supported; Hearth rejects requests whose timeout passes (REJECT)`, { reason: policy.path('timeout_action') });
      }
      policy.bool('allow_timeout_override'); // a request's own deadline always applies
      spec.batching.defaultTimeoutUs = policy.number('default_timeout_microseconds') ?? 0;
      spec.batching.maxQueueSize = policy.number('max_queue_size') ?? 0;
      policy.done();
    }
    dynamic.done();
  }
  top.done();
  return parseSpec(spec, 'config.pbtxt');
}

export interface TritonModelFolder {
  spec: FunctionSpec;
  /** The folder. */
  dir: string;
  /** The version whose model file the spec names ("1/model.pt"). */
  version: number;
}

/** Reads a Triton model folder: config.pbtxt and the highest numbered version that has the model file. */
export async function loadTritonModelFolder(dir: string): Promise<TritonModelFolder> {
  let text: string;
  try {
    text = await readFile(join(dir, 'config.pbtxt'), 'utf8');
  } catch (cause) {
    throw new InvalidInputError(`${dir} has no readable config.pbtxt`, { cause });
  }
  const first = tritonConfigToSpec(text, { folderName: basename(dir) });
  const entries = await readdir(dir);
  const versions = entries.filter((e) => /^\d+$/.test(e)).map(Number).sort((a, b) => b - a);
  for (const version of versions) {
    const file = join(dir, String(version), first.model);
    const found = await stat(file).then((s) => s.isFile(), () => false);
    if (found) return { spec: parseSpec({ ...first, model: `${version}/${first.model}` }, 'config.pbtxt'), dir, version };
  }
  throw new InvalidInputError(`${dir} has no <version>/${first.model} (versions found: ${versions.join(', ') || 'none'})`);
}
