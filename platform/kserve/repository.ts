/**
 * Triton's model repository extension on Hearth's functions: the index, unload, and load — plain
 * (the function's pool starts now), or with `parameters.config` (a model configuration in JSON
 * used instead of the current one) and `file:<version>/<name>` contents (the model's files in the
 * request), which make a new version of the function, as a reload with a new configuration makes
 * a new model in Triton. Failures carry Triton's words first ("failed to load 'NAME', …"), which
 * its clients look for, then Hearth's.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';

import {
  errorFromBody,
  FunctionNotFoundError,
  InvalidInputError,
  ModelLoadError,
  ModelPollError,
  PayloadTooLargeError,
  toHearthError,
} from '../../sdk/errors.js';
import type { FunctionSpec, FunctionSpecInput } from '../../sdk/spec/function-spec.js';
import { parseSpec } from '../../sdk/spec/index.js';
import type { TextMessage } from '../../sdk/spec/triton/index.js';
import { jsonConfigToMessage, tritonMessageToInput } from '../../sdk/spec/triton/index.js';
import type { ArtifactStore } from '../artifacts/index.js';
import type { ServingFunctions } from '../functions/serving.js';
import type { FunctionVersion } from '../registry/index.js';
import { parseJson } from './json.js';
import { modelConfig } from './model-config.js';

/** A load request's parameters, read from either transport. */
export interface LoadRequest {
  /** `parameters.config`: a ModelConfig as JSON text. */
  config?: string;
  /** `file:<version>/<name>` contents, by `<version>/<name>`. */
  files: Map<string, Uint8Array>;
  /** Why a `file:` parameter's name cannot be laid out as a model's file (the load fails, as Triton's poll). */
  badFile?: string;
}

/** Longest file or folder name (Linux's NAME_MAX). */
const NAME_MAX = 255;

/** The bytes a base64 text decodes to (its whitespace aside), counted without decoding it. */
function base64Bytes(text: string): number {
  const chars = text.replace(/\s/g, '');
  const padding = chars.endsWith('==') ? 2 : chars.endsWith('=') ? 1 : 0;
  return Math.floor((chars.length * 3) / 4) - padding;
}

/**
 * A load's `parameters` (HTTP: the body's object, file contents base64; gRPC: the
 * ModelRepositoryParameter values unwrapped, file contents bytes). Its `file:` contents together
 * are at most `maxFileBytes` (HEARTH_MAX_BODY_BYTES, the bound of a gRPC message), counted before
 * any is decoded: a larger model is uploaded as an artifact (streamed to disk), not held in memory.
 */
export function readLoadParameters(parameters: unknown, maxFileBytes: number): LoadRequest {
  const request: LoadRequest = { files: new Map() };
  let fileBytes = 0;
  const count = (key: string, bytes: number) => {
    fileBytes += bytes;
    if (fileBytes > maxFileBytes)
      throw new PayloadTooLargeError(
        `parameters["${key}"]: a load's file: contents are at most ${maxFileBytes} bytes together (HEARTH_MAX_BODY_BYTES); deploy a larger model as an artifact (hearth deploy, PUT /api/v1/artifacts/{sha256})`,
      );
  };
  if (parameters === undefined || parameters === null) return request;
  if (typeof parameters !== 'object' || Array.isArray(parameters))
    throw new InvalidInputError("the load request's parameters must be an object");
  for (const [key, raw] of Object.entries(parameters)) {
    // HTTP carries values as they are; a { string_param } object is gRPC's shape, taken on HTTP too.
    const value =
      typeof raw === 'object' && raw !== null && !(raw instanceof Uint8Array)
        ? ((raw as Record<string, unknown>).string_param ?? (raw as Record<string, unknown>).bytes_param)
        : raw;
    if (key === 'config') {
      if (typeof value !== 'string')
        throw new InvalidInputError('parameters.config must be the model configuration as a JSON string');
      request.config = value;
    } else if (key.startsWith('file:')) {
      const path = key.slice('file:'.length);
      const named = /^[1-9]\d*\/[A-Za-z0-9_.-]+$/.test(path) && !path.includes('/..');
      if (!named || path.split('/').some((part) => Buffer.byteLength(part) > NAME_MAX)) {
        const shown = key.length > 80 ? `${key.slice(0, 80)}…` : key;
        request.badFile ??= `parameters["${shown}"]: a file is named file:<version>/<file name> of at most ${NAME_MAX} bytes, as file:1/model.pt`;
      }
      if (value instanceof Uint8Array) {
        count(key, value.byteLength);
        request.files.set(path, value);
      } else if (typeof value === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(value.replace(/\s/g, ''))) {
        count(key, base64Bytes(value));
        request.files.set(path, Buffer.from(value, 'base64'));
      } else throw new InvalidInputError(`parameters["${key}"] must be the file's content, base64-encoded`);
    }
    // Other parameters (Triton has none for load besides these) are ignored, as Triton ignores them.
  }
  return request;
}

/** A failure of a load for `name`, in Triton's words and then Hearth's, with its code kept. */
function failedToLoad(name: string, error: unknown): Error {
  const e = toHearthError(error);
  const poll =
    e instanceof FunctionNotFoundError || e instanceof ModelPollError ? 'failed to poll from model repository: ' : '';
  return errorFromBody({ error: `failed to load '${name}', ${poll}${e.message}`, code: e.code });
}

/** The spec's fields each top-level ModelConfig field sets. */
const SETS: Record<string, (keyof FunctionSpecInput)[]> = {
  max_batch_size: ['maxBatchSize'],
  input: ['inputs'],
  output: ['outputs'],
  dynamic_batching: ['batching'],
  sequence_batching: ['sequence'],
  instance_group: ['instances', 'scaling'],
  parameters: ['parameters', 'execution', 'instances'],
  model_warmup: ['warmup'],
  default_model_filename: ['model'],
};

/**
 * The new version's spec. Fields the override leaves out are the current version's, as Triton's
 * auto-complete fills a configuration's missing fields from the model (a PyTorch model cannot tell
 * its inputs): `{"max_batch_size": 16}` changes only that. With no current version (a new model
 * from `file:` contents) the override is the whole configuration.
 */
function overriddenSpec(name: string, override: TextMessage, current: FunctionVersion | undefined): FunctionSpec {
  const named = override.name?.[0];
  if (named !== undefined && named !== name)
    throw new InvalidInputError(`the configuration names the model '${String(named)}', not '${name}'`);
  if (!current) return parseSpec(tritonMessageToInput(override, { folderName: name }), 'parameters.config');
  // The whole configuration is checked as one (dynamic batching needs a batch dimension, …).
  const base = jsonConfigToMessage(modelConfig(current.spec, { cudaAvailable: true }));
  const merged = tritonMessageToInput({ ...base, ...override }, { folderName: name });
  const spec: Record<string, unknown> = { ...current.spec };
  for (const field of Object.keys(override)) {
    for (const key of SETS[field] ?? []) {
      const value = (merged as Record<string, unknown>)[key];
      if (key === 'instances') spec.instances = { ...current.spec.instances, ...(value as object) };
      else if (key === 'scaling')
        spec.scaling = {
          ...current.spec.scaling,
          maxInstances: Math.max(current.spec.scaling.maxInstances, merged.instances?.count ?? 1),
        };
      else if (value === undefined) delete spec[key];
      else spec[key] = value;
    }
  }
  return parseSpec(spec, 'parameters.config');
}

/** The model file of a `file:` load: the highest version's file named as the configuration names it. */
function modelFile(spec: FunctionSpec, files: Map<string, Uint8Array>): Uint8Array {
  const wanted = spec.model.split('/').pop()!;
  const versions = [...files.keys()].map((p) => Number(p.split('/')[0])).sort((a, b) => b - a);
  const bytes = files.get(`${versions[0]}/${wanted}`);
  if (!bytes)
    throw new InvalidInputError(
      `no file:${versions[0]}/${wanted}: Hearth loads the model file the configuration names (default_model_filename, else model.pt) from the highest version given`,
    );
  return bytes;
}

export interface RepositoryDeps {
  functions: ServingFunctions;
  artifacts: Pick<ArtifactStore, 'stat' | 'put' | 'claim'>;
  /** The caller's tenant: `file:` contents it sends are its to use (../artifacts/claims.ts). */
  tenant: string;
}

/** Triton's repository load, on this node. */
export async function loadModel(deps: RepositoryDeps, name: string, request: LoadRequest): Promise<void> {
  try {
    if (request.badFile !== undefined) throw new ModelPollError(request.badFile);
    if (request.config === undefined) {
      if (request.files.size > 0)
        throw new InvalidInputError('file: contents need parameters.config, the configuration of the model they make');
      await deps.functions.load(name);
      return;
    }
    const override = jsonConfigToMessage(parseJson(request.config, 'parameters.config'), 'parameters.config');
    const current = await deps.functions.resolve(name).catch((error: unknown) => {
      if (error instanceof FunctionNotFoundError && request.files.size > 0) return undefined;
      throw error;
    });
    const spec = overriddenSpec(name, override, current);
    let model = current?.artifacts.model;
    if (request.files.size > 0) {
      const bytes = modelFile(spec, request.files);
      model = createHash('sha256').update(bytes).digest('hex');
      if (!(await deps.artifacts.stat(model))) await deps.artifacts.put(model, Readable.from([Buffer.from(bytes)]));
      await deps.artifacts.claim(model, deps.tenant);
    }
    // The function's hook stays (KServe infer skips it; its function URL keeps it).
    const hook = current?.artifacts.hook;
    const example = spec.exampleFile === undefined ? undefined : current?.artifacts.example;
    const version = await deps.functions.deploy(spec, {
      model: model!,
      ...(hook ? { hook } : {}),
      ...(example ? { example } : {}),
    });
    if (version.status === 'failed') throw new ModelLoadError(version.reason ?? 'the new version failed to load');
  } catch (error) {
    throw failedToLoad(name, error);
  }
}
