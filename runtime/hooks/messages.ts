/** What crosses between the pool and its hook worker threads. */
import type { TensorSpec } from '../../sdk/spec/function-spec.js';
import type { TensorsByName } from '../../sdk/tensor.js';
import type { Placed, Slot } from './exchange.js';

export interface HookWorkerData {
  /** The bundled hook (an ES module file); absent: the default JSON hook. */
  bundlePath?: string;
  hookName: string;
  function: string;
  version: number;
  inputs: TensorSpec[];
  outputs: TensorSpec[];
  maxBatchSize: number;
  /** Run the bundled hook in a V8 isolate (runtime/hooks/sandbox.ts) rather than import it. */
  sandbox?: boolean;
  /** The isolate's memory (heap and ArrayBuffers), MB: limits.hookMemoryMb. */
  memoryMb?: number;
  /** Longest one hook call may run in its isolate (ms): limits.hookTimeoutMs. */
  timeoutMs?: number;
  /** The secrets the spec lists: the hook's ctx.secrets. */
  secrets?: Record<string, string>;
  /** The largest response post may return (limits.maxResponseMb). */
  maxResponseBytes?: number;
  /** WebAssembly in the hook's isolate (limits.hookWebAssembly); absent there otherwise. */
  webAssembly?: boolean;
  /**
   * A BroadcastChannel on which the pool asks its threads, before it ends them, to dispose their
   * isolates and quiesce (sandbox.ts); each answers QUIESCED on it. Sandboxed pools only.
   */
  closeChannel?: string;
  /** The addon's path, as the pool's thread resolved it (the image functions load it). */
  addonPath?: string;
  /**
   * A group's crossing that fails as a whole (past the time limit, out of memory) is not run again
   * here one request at a time: its requests come back failed `again`, for the pool to run each
   * alone on a hook thread. The runner's own thread (HookPoolOptions.inline) runs hooks this way, so
   * that a turn's requests that loop hold it for one time limit, not one each.
   */
  retryElsewhere?: boolean;
  /** The pool's exchange with its threads (exchange.ts): runner processes' sandboxed pools. */
  exchange?: SharedArrayBuffer;
}

/** What the pool says on its closeChannel before it ends its threads. */
export const CLOSING = 'closing';
/** What a thread answers on its pool's closeChannel once it may be ended. */
export const QUIESCED = 'quiesced';

export interface RawRequest {
  body: Uint8Array;
  contentType: string;
}

/** A request sent to a hook thread: its slot in the exchange, where its body may lie (then `body` is empty). */
export type ThreadRequest = RawRequest & { slot?: Slot };

export type HookTask = (
  | { op: 'setup' }
  | { op: 'pre'; requests: ThreadRequest[] }
  | { op: 'post'; items: { outputs: TensorsByName; request: RawRequest }[] }
) & {
  /**
   * Where a thread says how far it got with the task (HOOK_LOADING, then HOOK_RUNNING), so that the
   * pool counts the hook's time limit from when the hook's code starts — not from when the task was
   * queued, nor across a new thread's start (Atomics.notify on a shared Int32Array).
   */
  progress?: Int32Array;
};

/** The thread has taken the task and is loading the hook (a new thread: import and setup). */
export const HOOK_LOADING = 1;
/** The hook's own code runs the task. */
export const HOOK_RUNNING = 2;

/** Where a hook failed, and whether it was the caller's input (400) or the hook itself. */
export interface HookFailure {
  ok: false;
  phase: 'setup' | 'pre' | 'post';
  message: string;
  /** `input`: the request was bad (unparseable JSON, wrong tensors from the default hook). */
  kind: 'hook' | 'input';
  reason?: string;
  /** The thrown error's frames in the hook's own sources (runtime/hooks/stack.ts), for its log. */
  stack?: string;
  /** Not run to its end: its group failed as a whole; run it again alone (HookWorkerData.retryElsewhere). */
  again?: true;
}

/** `placed`: tensors the thread put in the request's slot (their `data` is left empty). */
export type PreItemResult = { ok: true; tensors: TensorsByName; body: Uint8Array; placed?: Placed } | HookFailure;
/**
 * `us`: how long the hook's code took for the task's requests together, on the thread it ran on (µs):
 * CPU time for a task of eight or more, wall time for a smaller one (hook-cost.ts taskClock).
 */
export type PreResult = { ok: true; items: PreItemResult[]; us: number } | HookFailure;
export type PostItemResult = { ok: true; body: Uint8Array; contentType: string } | HookFailure;
export type PostResult = { ok: true; items: PostItemResult[]; us: number } | HookFailure;
export type SetupResult = { ok: true } | HookFailure;
