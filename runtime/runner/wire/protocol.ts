/**
 * The node ↔ runner protocol: every message either end sends, as a union told apart by `t`, and
 * one codec a side. The node decodes what a runner sends with `decodeFromRunner` and `readReply`,
 * checking every field: a runner is the tenant's, and its model is native code that can write
 * anything on its channel. The runner decodes what its node sends with `decodeToRunner`. Tensors
 * and bodies ride as the frame's blobs (channel.ts); a header names them by index.
 */
import { z } from 'zod';

import type { HearthError } from '../../../sdk/errors.js';
import { errorFromBody, InferenceError } from '../../../sdk/errors.js';
import type { FunctionSpec } from '../../../sdk/spec/function-spec.js';
import type { Tensor, TensorsByName } from '../../../sdk/tensor.js';
import { bytesOf, elementSize, isDType, numel, viewAs } from '../../../sdk/tensor.js';
import type { SequenceFlags } from '../../batcher/index.js';
import type { CallOptions, ColdStart, PoolEvent, PoolStats } from '../../pool/index.js';
import type { JailReport } from '../walls/index.js';

// --- the parts ------------------------------------------------------------------------------------

/** A tensor in a header: its data is blob `blob`. */
export interface WireTensor {
  dtype: string;
  shape: number[];
  blob: number;
}
export type WireTensors = Record<string, WireTensor>;

/** Tensors as header fields plus blobs (appended to `blobs`). */
export function packTensors(tensors: TensorsByName, blobs: Uint8Array[]): WireTensors {
  const out: WireTensors = {};
  for (const [name, t] of Object.entries(tensors)) {
    out[name] = { dtype: t.dtype, shape: t.shape, blob: blobs.length };
    blobs.push(bytesOf(t.data));
  }
  return out;
}

/**
 * Tensors back from header fields and blobs; one whose blob does not hold its shape is refused, and
 * so are tensors past `maxBytes` in all (the bytes a reply may carry: limits.maxResponseMb a
 * caller), checked before any is viewed.
 */
export function unpackTensors(
  wire: WireTensors,
  blobs: Uint8Array[],
  maxBytes = Number.POSITIVE_INFINITY,
): TensorsByName {
  const entries = Object.entries(wire);
  const bytes = entries.reduce((n, [, w]) => n + (blobs[w.blob]?.byteLength ?? 0), 0);
  if (bytes > maxBytes)
    throw new InferenceError(
      `the runner answered ${bytes} bytes of outputs, over its limit of ${maxBytes} (limits.maxResponseMb)`,
      {
        reason: 'ERR_OUTPUT_SIZE',
      },
    );
  const out: TensorsByName = {};
  for (const [name, w] of entries) {
    const b = blobs[w.blob];
    const shapeOk = Array.isArray(w.shape) && w.shape.every((d) => Number.isSafeInteger(d) && d >= 0);
    if (
      !b ||
      !isDType(w.dtype) ||
      !shapeOk ||
      (w.dtype !== 'BYTES' && numel(w.shape) * elementSize(w.dtype) !== b.byteLength)
    ) {
      throw new InferenceError(`tensor "${name}" came back malformed from the runner`);
    }
    out[name] = { dtype: w.dtype, shape: w.shape, data: viewAs(w.dtype, b) } as Tensor;
  }
  return out;
}

/** An error as a header field, and back as its class (the code picks the class). */
export interface WireError {
  code: string;
  error: string;
  reason?: string;
}

export function packError(error: HearthError): WireError {
  return { code: error.code, error: error.message, ...(error.reason === undefined ? {} : { reason: error.reason }) };
}

export function unpackError(wire: WireError): HearthError {
  const e = errorFromBody(wire);
  if (wire.reason !== undefined) Object.defineProperty(e, 'reason', { value: wire.reason });
  return e;
}

/** A sequence's flags: its id travels as a string, and `big` says it was a bigint (a uint64 id). */
export interface WireSequence {
  id: string;
  big: boolean;
  start: boolean;
  end: boolean;
  /** The caller's opaque id (SequenceFlags.caller), absent for the one caller of a node with no keys. */
  caller?: string;
}

/**
 * What a call carries beside its input: the time it has left, its priority, its sequence, and how
 * many callers' requests it holds (CallOptions.requests).
 */
export interface CallFields {
  remainingMs?: number;
  priority?: number;
  sequence?: WireSequence;
  requests?: number;
}

/** A call's options as they cross: the deadline as the time left (the processes' clocks differ). */
export function packCall(options: CallOptions, remainingMs: number | undefined): CallFields {
  const seq = options.sequence;
  return {
    ...(remainingMs === undefined ? {} : { remainingMs }),
    ...(options.priority === undefined ? {} : { priority: options.priority }),
    ...(options.requests === undefined ? {} : { requests: options.requests }),
    ...(seq
      ? {
          sequence: {
            id: String(seq.id),
            big: typeof seq.id === 'bigint',
            start: seq.start,
            end: seq.end,
            ...(seq.caller ? { caller: seq.caller } : {}),
          },
        }
      : {}),
  };
}

/** A call's options back, on the runner's clock, with the runner's own cancel signal. */
export function unpackCall(fields: CallFields, signal: AbortSignal): CallOptions {
  const { remainingMs, priority, sequence, requests } = fields;
  return {
    deadline: remainingMs === undefined ? undefined : performance.now() + remainingMs,
    signal,
    priority,
    ...(requests === undefined ? {} : { requests }),
    ...(sequence ? { sequence: unpackSequence(sequence) } : {}),
  };
}

function unpackSequence(s: WireSequence): SequenceFlags {
  return { id: s.big ? BigInt(s.id) : s.id, start: s.start, end: s.end, ...(s.caller ? { caller: s.caller } : {}) };
}

/** What a runner reports of its pool: its figures, the requests it takes now, its device. */
export interface Snapshot {
  stats: PoolStats;
  room: number;
  device: string;
}

// --- node → runner --------------------------------------------------------------------------------

/** The version a runner is to serve (`start`). */
export interface StartMessage {
  spec: FunctionSpec;
  version: number;
  model: string;
  hookBundle?: string;
  /** Requests the node holds for this version: they are the warm-up (no dummy passes). */
  waiting: number;
  /** The secrets the spec lists, for the hook's ctx.secrets: over the channel, never in the environment. */
  secrets?: Record<string, string>;
}

/** Requests: each gets a reply with its id. */
export type Request =
  | ({ t: 'start' } & StartMessage)
  /** Blob 0 is the body. */
  | ({ t: 'invoke'; contentType: string } & CallFields)
  /** The blobs are the tensors' data. */
  | ({ t: 'infer'; tensors: WireTensors } & CallFields)
  | { t: 'stats' }
  | { t: 'drain' }
  | { t: 'stop' };
export type Asked = Request['t'];

/** Messages without a reply. `cancel` names the request it cancels. */
export type Notice = { t: 'cancel'; id: number } | { t: 'add' } | { t: 'remove' };

export type ToRunner = (Request & { id: number }) | Notice;

// --- runner → node --------------------------------------------------------------------------------

/** What each request's reply carries when it succeeded. */
export interface Replies {
  start: Snapshot & { coldStart?: ColdStart };
  /** Blob 0 is the response body. */
  invoke: { contentType: string };
  /** The blobs are the outputs' data. */
  infer: { tensors: WireTensors };
  stats: Snapshot;
  drain: { stats?: PoolStats };
  stop: { stats?: PoolStats };
}

export type Succeeded<K extends Asked> = { t: 'reply'; id: number; ok: true } & Replies[K];
/** `unanswered`: the node made it, for a request its runner never counted (it died, or had). */
export interface Failed {
  t: 'reply';
  id: number;
  ok: false;
  error: WireError;
  unanswered?: boolean;
}
export type Reply<K extends Asked> = Succeeded<K> | Failed;

/** A reply as it arrives: which request it answers is the waiter's to know (readReply). */
export interface ReplyFrame {
  t: 'reply';
  id: number;
  ok: boolean;
  [field: string]: unknown;
}

export type FromRunner =
  | { t: 'hello'; pid: number }
  | ({ t: 'jail' } & JailReport)
  | ({ t: 'snapshot' } & Snapshot)
  | { t: 'event'; event: PoolEvent }
  | { t: 'hung'; rows: number; limitMs: number }
  | ReplyFrame;

/** A reply of the runner's, for the node to send (runner side). */
export type RunnerReply = { [K in Asked]: Omit<Succeeded<K>, 't' | 'id'> }[Asked] | Omit<Failed, 't' | 'id'>;

// --- the node's codec: every field a runner sends, checked ----------------------------------------

const count = z.number().int().nonnegative();
const duration = z.object({ count: z.number(), totalUs: z.number(), maxUs: z.number() });
const POOL_STATES = ['cold', 'loading', 'warm', 'restarting', 'draining', 'stopped', 'failed'] as const;
const coldStart = z.object({
  queue: z.number().optional(),
  fetch: z.number(),
  load: z.number(),
  warmup: z.number(),
  source: z.string().optional(),
});
const poolStats = z.object({
  state: z.enum(POOL_STATES),
  instances: z.object({ total: count, idle: count, busy: count, loading: count }),
  queueDepth: count,
  pending: count,
  hookThreads: count,
  coldStart: coldStart.optional(),
  latency: z.object({ p50Ms: z.number(), p99Ms: z.number(), of: count }).optional(),
  gpuMemory: z
    .object({ allocatedBytes: z.number(), reservedBytes: z.number(), capBytes: z.number().optional() })
    .optional(),
  success: count,
  failure: count,
  failures: z.record(z.string(), count),
  execCount: count,
  inferenceCount: count,
  batchSizes: z.record(z.string(), count),
  batchCompute: z.record(z.string(), duration),
  lastInferenceMs: z.number(),
  durations: z.object({
    request: duration,
    success: duration,
    failure: duration,
    queue: duration,
    compute: duration,
    requestCompute: duration,
    pre: duration,
    post: duration,
  }),
}) satisfies z.ZodType<PoolStats>;
const snapshot = { stats: poolStats, room: count, device: z.string() };
const wireTensors = z.record(z.string(), z.object({ dtype: z.string(), shape: z.array(z.number()), blob: count }));
const wireError = z.object({ code: z.string(), error: z.string(), reason: z.string().optional() });

const fromRunner = z.discriminatedUnion('t', [
  z.object({ t: z.literal('hello'), pid: z.number().int() }),
  z.object({
    t: z.literal('jail'),
    pid: z.number().int(),
    uid: z.number().int(),
    layers: z.object({
      namespaces: z.string(),
      privateProc: z.boolean(),
      uid: z.boolean(),
      landlock: z.number(),
      seccomp: z.boolean(),
      cgroup: z.boolean(),
      oomScoreAdj: z.number().int().min(-1000).max(1000),
    }),
    notes: z.array(z.string()),
  }),
  z.object({ t: z.literal('snapshot'), ...snapshot }),
  z.object({
    t: z.literal('event'),
    event: z.object({
      at: z.number(),
      type: z.enum(['state', 'instance-added', 'instance-removed', 'load-failed', 'cold-start']),
      state: z.enum(POOL_STATES),
      detail: z.string().optional(),
    }),
  }),
  z.object({ t: z.literal('hung'), rows: count, limitMs: z.number() }),
  z.looseObject({ t: z.literal('reply'), id: z.number().int(), ok: z.boolean() }),
]);

/** The fields of each successful reply, by the request it answers. */
const replies: { [K in Asked]: z.ZodType<Replies[K]> } = {
  start: z.object({ ...snapshot, coldStart: coldStart.optional() }),
  invoke: z.object({ contentType: z.string() }),
  infer: z.object({ tensors: wireTensors }),
  stats: z.object(snapshot),
  drain: z.object({ stats: poolStats.optional() }),
  stop: z.object({ stats: poolStats.optional() }),
};
const failed = z.object({
  t: z.literal('reply'),
  id: z.number(),
  ok: z.literal(false),
  error: wireError,
  unanswered: z.boolean().optional(),
});

/** A message from a runner, checked; anything else throws (the channel then reads no more from it). */
export function decodeFromRunner(header: unknown): FromRunner {
  return fromRunner.parse(header);
}

/** A reply checked as the answer to a `kind` request; a malformed one throws. */
export function readReply<K extends Asked>(kind: K, reply: ReplyFrame): Reply<K> {
  if (!reply.ok) return failed.parse(reply);
  const { t, id, ok, ...fields } = reply;
  const checked: Replies[K] = replies[kind].parse(fields);
  const head = { t: 'reply', id, ok: true } as const;
  return { ...checked, ...head };
}

// --- the runner's codec ---------------------------------------------------------------------------

const callFields = {
  remainingMs: z.number().optional(),
  priority: z.number().int().optional(),
  requests: z.number().int().min(1).optional(),
  sequence: z
    .object({
      id: z.string(),
      big: z.boolean(),
      start: z.boolean(),
      end: z.boolean(),
      caller: z.string().max(64).optional(),
    })
    .optional(),
};
const id = z.number().int();
const toRunner = z.discriminatedUnion('t', [
  z.object({
    t: z.literal('start'),
    id,
    // The node parsed it (parseSpec) before it ever sent it.
    spec: z.custom<FunctionSpec>((v) => typeof v === 'object' && v !== null),
    version: z.number().int(),
    model: z.string(),
    hookBundle: z.string().optional(),
    waiting: count,
    secrets: z.record(z.string(), z.string()).optional(),
  }),
  z.object({ t: z.literal('invoke'), id, contentType: z.string(), ...callFields }),
  z.object({ t: z.literal('infer'), id, tensors: wireTensors, ...callFields }),
  z.object({ t: z.literal('stats'), id }),
  z.object({ t: z.literal('drain'), id }),
  z.object({ t: z.literal('stop'), id }),
  z.object({ t: z.literal('cancel'), id }),
  z.object({ t: z.literal('add') }),
  z.object({ t: z.literal('remove') }),
]);

/** A message from the node. */
export function decodeToRunner(header: unknown): ToRunner {
  return toRunner.parse(header);
}
