/**
 * A function version's hook threads: a piscina pool running its bundled hook (or the default JSON
 * hook), never on the event loop.
 *
 * Isolation: threads get an empty environment (no platform secrets) and a heap limit. A task past
 * its deadline is aborted, which terminates its thread; piscina starts a replacement. A thread that
 * exhausts its heap dies the same way. Either way only that request fails, with a HookError naming
 * the hook and the phase. The threads and a task's run on them: hook-threads.ts; here, the requests'
 * path to them (pre in groups, post by batch, inline calls).
 *
 * Inline (runner processes only): the hook is loaded on the calling thread too, and a call runs
 * there, in the same isolate sandbox under the same time limit, when the pool holds no other
 * request or when the hook costs a request less than a hop to a thread and back would
 * (hook-cost.ts) — the pre calls of one turn then cross into the isolate together. The thread is
 * the function's own, so a hook that runs long there holds up only its own function; its cost
 * then sends its later calls to the threads.
 */

import type { HearthError } from '../../sdk/errors.js';
import { CancelledError, QueueFullError, toHearthError } from '../../sdk/errors.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import type { TensorsByName } from '../../sdk/tensor.js';
import { usableCores } from '../engine/index.js';
import { copyOf, ownsWholeBuffer } from '../tensors/index.js';
import { EXCHANGE_BYTES, Exchange, inputBytes } from './exchange.js';
import type { Phase } from './hook-cost.js';
import { HookCost } from './hook-cost.js';
import type { HookCallOptions } from './hook-threads.js';
import { HookThreads, hookFailure } from './hook-threads.js';
import type {
  HookFailure,
  HookWorkerData,
  PostResult,
  PreResult,
  RawRequest,
  SetupResult,
  ThreadRequest,
} from './messages.js';
import { MAX_PRE_GROUP, MAX_PRE_GROUP_BYTES, preGroupSize } from './pre-groups.js';
import type { PreOutcome, PreWaiter } from './pre-waiters.js';
import { bodyBytes, ownBody, threadWaiter } from './pre-waiters.js';
import type { HookRunner } from './worker.js';
import { createHookRunner } from './worker.js';

export interface HookPoolOptions {
  spec: FunctionSpec;
  version: number;
  /** The bundled hook; absent: the default JSON hook. */
  bundlePath?: string;
  /** Longest a pre or post may run (ms); a request's own deadline may cut it shorter. Default 10 s. */
  timeoutMs?: number;
  /** Heap limit per hook thread. Default 256 MiB. */
  maxHeapMb?: number;
  /** Run the function's hook in a V8 isolate with no Node APIs, capped at maxHeapMb (runner processes do). */
  sandbox?: boolean;
  /** Requests waiting for a free hook thread at most (QueueFullError beyond). Default 4096. */
  maxQueue?: number;
  /** Most hook threads: they start at one and grow with load up to this. Default: the cores. */
  threads?: number;
  /**
   * Also run the hook on this thread, for calls that say they may (HookCallOptions.inline). Only where
   * this thread belongs to the function alone (a runner process), and with `sandbox`.
   */
  inline?: boolean;
  /** The secrets the spec lists, by name: the hook's `ctx.secrets` (handed over in memory only). */
  secrets?: Record<string, string>;
  /** The largest response post may return (default 64 MiB). */
  maxResponseBytes?: number;
  /** WebAssembly in the hook's sandbox (default off: its memory escapes maxHeapMb). */
  webAssembly?: boolean;
}

export type PostOutcome = { ok: true; body: Uint8Array; contentType: string } | { ok: false; error: HearthError };

export class HookPool {
  readonly name: string;
  readonly #threads: HookThreads;
  readonly #timeoutMs: number;
  readonly #maxThreads: number;
  readonly #preQueue: PreWaiter[] = [];
  #maxQueue = 4096;
  #preInFlight = 0;
  readonly #inline: HookRunner | undefined;
  readonly #sandboxed: boolean;
  #inlineCalls = 0;
  readonly #cost = new HookCost();
  /** This turn's pre calls to run inline, together. */
  #inlinePre: PreWaiter[] = [];
  #inlinePreBytes = 0;
  /** Memory shared with the threads, for large bodies and tensors (runner processes). */
  #exchange: Exchange | undefined;

  private constructor(
    threads: HookThreads,
    name: string,
    timeoutMs: number,
    maxThreads: number,
    inline: HookRunner | undefined,
    sandboxed: boolean,
  ) {
    this.#threads = threads;
    this.name = name;
    this.#timeoutMs = timeoutMs;
    this.#maxThreads = maxThreads;
    this.#inline = inline;
    this.#sandboxed = sandboxed;
  }

  /** Starts the threads and runs the hook's setup once, so a hook that cannot start fails here. */
  static async create(options: HookPoolOptions): Promise<HookPool> {
    const { spec } = options;
    const name = options.bundlePath ? `${spec.name}/${spec.hook ?? 'hook'}` : `${spec.name}/default`;
    const workerData: HookWorkerData = {
      bundlePath: options.bundlePath,
      hookName: name,
      function: spec.name,
      version: options.version,
      inputs: spec.inputs,
      outputs: spec.outputs,
      maxBatchSize: spec.maxBatchSize,
      sandbox: options.sandbox ?? false,
      memoryMb: options.maxHeapMb ?? 256,
      timeoutMs: options.timeoutMs ?? 10_000,
      secrets: options.secrets ?? {},
      maxResponseBytes: options.maxResponseBytes ?? 64 * 2 ** 20,
      webAssembly: options.webAssembly ?? false,
    };
    const threads = options.threads ?? usableCores().cores;
    const sandboxed = Boolean(options.sandbox && options.bundlePath);
    // In a runner process (inline), whose threads run only our worker, hooks in isolates that never
    // see it: a request's body is held by its caller until it is answered.
    const exchange =
      options.inline && sandboxed
        ? new Exchange(Math.min(EXCHANGE_BYTES, (workerData.memoryMb! * 2 ** 20) / 4), inputBytes(spec.inputs))
        : undefined;
    if (exchange) workerData.exchange = exchange.buffer;
    const hookThreads = await HookThreads.start(workerData, {
      threads,
      timeoutMs: options.timeoutMs ?? 10_000,
      sandbox: options.sandbox ?? false,
      sandboxed,
      maxHeapMb: options.maxHeapMb ?? 256,
    });
    const inline =
      options.inline && options.sandbox
        ? createHookRunner({ ...workerData, retryElsewhere: true, exchange: undefined })
        : undefined;
    const pool = new HookPool(hookThreads, name, options.timeoutMs ?? 10_000, threads, inline, sandboxed);
    pool.#maxQueue = options.maxQueue ?? pool.#maxQueue;
    pool.#exchange = exchange;
    try {
      const result = (await hookThreads.run({ op: 'setup' }, 'setup', {})) as SetupResult;
      if (!result.ok) throw pool.#failure(result);
      const here = inline && ((await inline({ op: 'setup' })).value as SetupResult);
      if (here && !here.ok) throw pool.#failure(here);
    } catch (error) {
      await hookThreads.close();
      throw error;
    }
    return pool;
  }

  /**
   * Runs pre on a request. Requests that arrive while every hook thread is busy go to the next free
   * thread together, in one task: a thread hop costs two cross-thread wake-ups, and one per request
   * would starve the batcher of requests under load. If a task of several requests times out or
   * loses its thread, each request is run again on its own, so only the one that loops or
   * exhausts the heap fails.
   */
  pre(request: RawRequest, options: HookCallOptions): Promise<PreOutcome> {
    if (options.signal?.aborted)
      return Promise.reject(new CancelledError('the request was cancelled before its pre hook ran'));
    // The body may be a view of the caller's buffer (the runner's arena) until this call settles:
    // a sandbox's crossing copies it this turn; anywhere else it gets a buffer of its own now.
    if (this.#inlineRoom(request.body.byteLength) && this.#runsInline(options, 'pre'))
      return new Promise((resolve, reject) => {
        this.#inlinePreBytes += request.body.byteLength;
        const own = this.#sandboxed ? request : ownBody(request);
        if (this.#inlinePre.push({ request: own, options, resolve, reject }) === 1)
          queueMicrotask(this.#flushInlinePre);
      });
    if (this.#preQueue.length >= this.#maxQueue)
      return Promise.reject(
        new QueueFullError(
          `${this.#preQueue.length} requests wait for the hook already (limits.hookQueueSize); retry later`,
        ),
      );
    return new Promise((resolve, reject) => {
      this.#preQueue.push(threadWaiter(this.#exchange, request, options, resolve, reject));
      this.#flushPre();
    });
  }

  #flushPre(): void {
    while (this.#preQueue.length > 0 && this.#preInFlight < this.#maxThreads) {
      const size = preGroupSize(this.#preQueue.length, this.#maxThreads - this.#preInFlight, (i) =>
        bodyBytes(this.#preQueue[i]!),
      );
      const group = this.#preQueue.splice(0, size).filter((w) => {
        if (!w.options.signal?.aborted) return true;
        w.reject(new CancelledError('the request was cancelled before its pre hook ran'));
        return false;
      });
      if (group.length === 0) continue;
      this.#preInFlight++;
      void this.#runPre(group, true).finally(() => {
        this.#preInFlight--;
        this.#flushPre();
      });
    }
  }

  async #runPre(group: PreWaiter[], isolateOnCrash: boolean): Promise<void> {
    const deadlines = group.map((w) => w.options.deadline ?? Infinity);
    const deadline = Math.min(...deadlines);
    // A lone request's body moves to the thread and back; a group's are copied (by memcpy), to
    // survive for the one-by-one retry if the thread dies; those in slots stay where they are.
    const requests: ThreadRequest[] = group.map((w) => ({
      ...(group.length === 1
        ? ownBody(w.request)
        : { body: copyOf(w.request.body), contentType: w.request.contentType }),
      slot: w.slot,
    }));
    // The slots are the task's too until it has ended (its callers may be answered first).
    const ended = this.#exchange?.holdEach(group.flatMap((w) => (w.slot ? [w.slot] : []))).letGo;
    let result: PreResult;
    try {
      result = (await this.#threads.run(
        { op: 'pre', requests },
        'pre',
        {
          // A sandboxed group runs to its end on its thread (#runToEnd): it gets no group deadline,
          // which would fail the whole group at its earliest deadline and run each one again beside
          // it. Each request's own deadline still answers its caller (the pool's pending request).
          deadline: deadline === Infinity || (this.#sandboxed && group.length > 1) ? undefined : deadline,
          signal: group.length === 1 ? group[0]!.options.signal : undefined,
        },
        requests.map((r) => r.body.buffer as ArrayBuffer),
        ended,
      )) as PreResult;
    } catch (error) {
      if (group.length > 1 && isolateOnCrash) {
        await Promise.all(group.map((w) => this.#runPre([w], false)));
      } else {
        for (const w of group) w.reject(error as HearthError);
      }
      return;
    }
    this.#settlePre(group, result);
  }

  /**
   * Answers each of `group` from its item of `result`; one whose group failed as a whole on this
   * thread runs again alone on a hook thread.
   */
  #settlePre(group: readonly PreWaiter[], result: PreResult): void {
    if (!result.ok) {
      for (const w of group) w.reject(this.#failure(result));
      return;
    }
    this.#cost.observe('pre', result.us, group.length);
    result.items.forEach((item, i) => {
      const w = group[i]!;
      if (item.ok) w.resolve({ tensors: item.tensors, body: item.body, placed: item.placed });
      else if (item.again) void this.#runPre([w], false);
      else w.reject(this.#failure(item));
    });
  }

  /** Runs post for every request of a batch in one task; each request gets its own outcome. */
  async post(
    items: { outputs: TensorsByName; request: RawRequest }[],
    options: HookCallOptions,
  ): Promise<PostOutcome[]> {
    // A sandbox here copies a body into its isolate only if the hook reads it; elsewhere each is
    // its own (#postOnThread copies those bound for a thread).
    const inline = this.#runsInline(options, 'post');
    if (!inline) return this.#postOnThread(items, options);
    if (!this.#sandboxed) items = items.map((item) => ({ ...item, request: ownBody(item.request) }));
    this.#inlineCalls++;
    const result = (await this.#inline!({ op: 'post', items })).value as PostResult;
    const outcomes = this.#postOutcomes(result, items.length);
    // Those whose crossing failed as a whole here run again on a thread, each alone there.
    const again = result.ok ? result.items.flatMap((r, i) => (!r.ok && r.again ? [i] : [])) : [];
    if (again.length > 0) {
      const there = await this.#postOnThread(
        again.map((i) => items[i]!),
        options,
      );
      again.forEach((at, k) => {
        outcomes[at] = there[k]!;
      });
    }
    return outcomes;
  }

  async #postOnThread(
    items: { outputs: TensorsByName; request: RawRequest }[],
    options: HookCallOptions,
  ): Promise<PostOutcome[]> {
    // The outputs and the requests' bodies move to the thread: they are not used here again. A
    // body that is a view (of the runner's arena, say) is copied first: cloned, it would take its
    // whole buffer along.
    items = items.map((item) => ({ ...item, request: ownBody(item.request) }));
    const buffers = new Set<ArrayBufferLike>();
    for (const item of items) {
      for (const t of Object.values(item.outputs)) buffers.add(t.data.buffer);
      const { body } = item.request;
      if (ownsWholeBuffer(body)) buffers.add(body.buffer);
    }
    const result = (await this.#threads.run({ op: 'post', items }, 'post', options, [...buffers])) as PostResult;
    return this.#postOutcomes(result, items.length);
  }

  /** Each request's outcome of a post task of `requests`, whose cost it counts; a task that failed whole throws. */
  #postOutcomes(result: PostResult, requests: number): PostOutcome[] {
    if (!result.ok) throw this.#failure(result);
    this.#cost.observe('post', result.us, requests);
    return result.items.map((r) => (r.ok ? r : { ok: false, error: this.#failure(r) }));
  }

  /**
   * Whether a call runs on this thread: the hooks run here, the call is alone in the pool or the
   * hook is cheap in `phase`, and there is time for the hook's whole limit.
   */
  #runsInline(options: HookCallOptions, phase: Phase): boolean {
    return (
      this.#inline !== undefined &&
      (options.inline === true || this.#cost.cheap(phase)) &&
      (options.deadline === undefined || options.deadline - performance.now() >= this.#timeoutMs)
    );
  }

  /** Whether this turn's inline group has room for a body of `bytes` (as a thread's group would). */
  #inlineRoom(bytes: number): boolean {
    const n = this.#inlinePre.length;
    return n === 0 || (n < MAX_PRE_GROUP && this.#inlinePreBytes + bytes <= MAX_PRE_GROUP_BYTES);
  }

  /** Runs this turn's inline pre calls, in one task (one crossing into the isolate, as a thread's group). */
  readonly #flushInlinePre = (): void => {
    const group = this.#inlinePre.filter((w) => {
      if (!w.options.signal?.aborted) return true;
      w.reject(new CancelledError('the request was cancelled before its pre hook ran'));
      return false;
    });
    this.#inlinePre = [];
    this.#inlinePreBytes = 0;
    if (group.length === 0) return;
    this.#inlineCalls++;
    const fail = (error: unknown) => {
      for (const w of group) w.reject(toHearthError(error));
    };
    this.#inline!({ op: 'pre', requests: group.map((w) => w.request) }).then((outcome) => {
      try {
        this.#settlePre(group, outcome.value as PreResult);
      } catch (error) {
        fail(error); // those answered already keep their answers
      }
    }, fail);
  };

  /** The hook's average cost a request in `phase` (µs; Infinity before its first call). */
  costUs(phase: Phase): number {
    return this.#cost.of(phase);
  }

  /** Tasks (a turn's pre calls, or a batch's post) that ran on the calling thread. */
  get inlineCalls(): number {
    return this.#inlineCalls;
  }

  /** Tasks (setup, pre calls, a batch's post) the hook threads have finished. */
  get threadTasks(): number {
    return this.#threads.completed;
  }

  get threads(): number {
    return this.#threads.threads;
  }

  /** Bytes of the exchange given out now (0 without one). */
  get exchangeUsed(): number {
    return this.#exchange?.used ?? 0;
  }

  /** Tasks queued for a free hook thread. */
  get queueSize(): number {
    return this.#threads.queueSize;
  }

  async close(): Promise<void> {
    await Promise.all([this.#threads.close(), this.#inline?.dispose()]);
  }

  #failure(f: HookFailure): HearthError {
    return hookFailure(f, this.name, this.#timeoutMs);
  }
}
