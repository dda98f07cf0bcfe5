/**
 * The hook contract: what a function's hook.ts exports, and what it receives.
 *
 * @example
 * import { defineHook, tensor } from '@hearth/sdk';
 * export default defineHook({
 *   pre: (req) => ({ x: tensor('FP32', [1, 4], new Float32Array(req.json as number[])) }),
 *   post: (out) => ({ scores: Array.from(out.y!.data as Float32Array) }),
 * });
 *
 * Hooks run in worker threads, one pool per function version, never on the event loop; they see no
 * platform environment variables. A hook that throws, returns the wrong tensors, runs past its time
 * limit or exhausts its heap fails only the request it was serving.
 */
import type { TensorSpec } from './spec/function-spec.js';
import type { TensorsByName } from './tensor.js';

/**
 * The request body as the hook sees it: parsed JSON, or the raw bytes with their content type. The
 * bytes are the whole of an ArrayBuffer of their own (byteOffset 0), so `viewAs('FP32', bytes)`
 * is a typed array over them without a copy, for any dtype.
 */
export type HookRequest =
  | { kind: 'json'; json: unknown; contentType: string }
  | { kind: 'bytes'; bytes: Uint8Array; contentType: string };

/** A response that is bytes with a content type rather than JSON (an image, audio, protobuf…). */
export interface BinaryResponse {
  readonly $binary: true;
  bytes: Uint8Array;
  contentType: string;
}

export function binaryResponse(bytes: Uint8Array, contentType: string): BinaryResponse {
  return { $binary: true, bytes, contentType };
}

export function isBinaryResponse(value: unknown): value is BinaryResponse {
  return typeof value === 'object' && value !== null && (value as { $binary?: unknown }).$binary === true;
}

export interface HookContext<State = unknown> {
  /** The function's name and version. */
  function: string;
  version: number;
  inputs: readonly TensorSpec[];
  outputs: readonly TensorSpec[];
  /** 0: the model has no batch dimension. */
  maxBatchSize: number;
  /** The secrets the spec lists (`secrets: [NAME]`), by name; nothing else. */
  secrets: Readonly<Record<string, string>>;
  /** What setup() returned. */
  state: State;
}

export interface Hook<State = unknown> {
  /** Shown in errors; defaults to the function's name. */
  name?: string;
  /** Runs once per worker thread before its first request (load a vocabulary, a label list…). */
  setup?(context: Omit<HookContext<State>, 'state'>): State | Promise<State>;
  /** The request → the model's input tensors, by the spec's input names. */
  pre(request: HookRequest, context: HookContext<State>): TensorsByName | Promise<TensorsByName>;
  /** The model's output tensors for this request (its rows only), by the spec's output names → the response. */
  post(outputs: TensorsByName, request: HookRequest, context: HookContext<State>): unknown | Promise<unknown>;
}

/**
 * Declares a hook; the identity function, there for the types (`ctx.state` is what `setup` returns).
 *
 * @example
 * // hook.ts beside hearth.yaml (`hook: hook.ts`), bundled by `hearth deploy`.
 * import { defineHook, InvalidInputError, tensorFromJson, tensorToJson } from '@hearth/sdk';
 *
 * export default defineHook({
 *   setup: () => ({ labels: ['cat', 'dog'] }), // once per hook thread; becomes ctx.state
 *   pre: (request) => {
 *     if (request.kind !== 'json') throw new InvalidInputError('send JSON: {"x": [[numbers], ...]}');
 *     return { x: tensorFromJson('FP32', (request.json as { x: number[][] }).x) };
 *   },
 *   post: (outputs, request, ctx) => ({ y: tensorToJson(outputs.y!), labels: ctx.state.labels }),
 * });
 */
export function defineHook<State = unknown>(hook: Hook<State>): Hook<State> {
  return hook;
}
