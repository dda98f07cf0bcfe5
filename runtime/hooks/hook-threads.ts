/**
 * A hook pool's threads (piscina), and one task run on them under two clocks: the request's deadline,
 * which runs from now, and the hook's limit, which runs from when its code starts on the thread
 * (hook-clock.ts). Either one past ends the task, and with it the thread (piscina starts a
 * replacement) — except for a sandboxed hook, whose task runs to its end while its caller is
 * answered at once (#runToEnd says why). And a hook's failure as its caller is told it (hookFailure).
 */
import { randomUUID } from 'node:crypto';

import { Piscina } from 'piscina';

import type { HearthError } from '../../sdk/errors.js';
import { CancelledError, DeadlineExceededError, HookError, InvalidInputError } from '../../sdk/errors.js';
import { clipBytes } from '../../sdk/text.js';
import { addonLocation } from '../engine/index.js';
import { hookWorkerFile } from './bundle.js';
import { watchHookTime } from './hook-clock.js';
import type { HookFailure, HookTask, HookWorkerData } from './messages.js';
import { CLOSING, QUIESCED } from './messages.js';

export interface HookCallOptions {
  /** Absolute deadline, performance.now() milliseconds. */
  deadline?: number;
  signal?: AbortSignal;
  /** The pool holds no other request: run on the calling thread, if the hook pool runs inline. */
  inline?: boolean;
}

/** Longest a hook's setup may run, whatever its per-call limit. */
export const SETUP_LIMIT_MS = 60_000;

export class HookThreads {
  readonly #piscina: Piscina;
  readonly #name: string;
  readonly #timeoutMs: number;
  /** Where the threads are asked to quiesce before they end: a sandboxed hook's threads only. */
  readonly #closeChannel: string | undefined;

  private constructor(piscina: Piscina, name: string, timeoutMs: number, closeChannel: string | undefined) {
    this.#piscina = piscina;
    this.#name = name;
    this.#timeoutMs = timeoutMs;
    this.#closeChannel = closeChannel;
  }

  /**
   * Threads running the hook worker on `workerData`: one at first, growing with load up to
   * `threads`; `timeoutMs`, the hook's limit per call. `sandboxed`: the function's hook runs in an
   * isolate on them.
   */
  static async start(
    workerData: HookWorkerData,
    o: { threads: number; timeoutMs: number; sandbox: boolean; sandboxed: boolean; maxHeapMb: number },
  ): Promise<HookThreads> {
    // Threads that run isolates quiesce before they end (close()).
    const closeChannel = o.sandboxed ? `hearth-hook-threads-${randomUUID()}` : undefined;
    const piscina = new Piscina({
      filename: await hookWorkerFile(),
      // Where the addon is (the image functions load it; the thread's own bundled file lies elsewhere).
      workerData: { ...workerData, closeChannel, addonPath: addonLocation() },
      // An idle thread waits for work on the event loop (Atomics.waitAsync), where it hears closeChannel.
      atomics: closeChannel ? 'async' : 'sync',
      minThreads: 1,
      maxThreads: o.threads,
      // Threads grow with load. Sandboxed ones stay once started: a runner whose idle thread piscina
      // ended with its isolate aborted (isolated-vm's "IsolateEnvironment::GetCurrent" assertion),
      // seen in bench:ceiling ~60 s after a pool's second thread started.
      idleTimeout: o.sandbox ? Number.POSITIVE_INFINITY : 60_000,
      env: {},
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: o.maxHeapMb, maxYoungGenerationSizeMb: 32 },
    });
    return new HookThreads(piscina, workerData.hookName, o.timeoutMs, closeChannel);
  }

  get threads(): number {
    return this.#piscina.threads.length;
  }

  /** Tasks queued for a free hook thread. */
  get queueSize(): number {
    return this.#piscina.queueSize;
  }

  /** Tasks the threads have finished (piscina's count). */
  get completed(): number {
    return this.#piscina.completed;
  }

  /**
   * Ends the threads. Sandboxed ones are first asked to dispose their isolates and quiesce
   * (sandbox.ts quiesce says why), each after the call it runs; one that has not answered within
   * the hook's limit (and a little) is ended as it is.
   */
  async close(): Promise<void> {
    if (this.#closeChannel) await this.#quiesce(this.#closeChannel);
    await this.#piscina.destroy();
  }

  async #quiesce(name: string): Promise<void> {
    const threads = this.#piscina.threads.length;
    if (threads === 0) return;
    const channel = new BroadcastChannel(name);
    let timer: NodeJS.Timeout | undefined;
    try {
      await new Promise<void>((resolve) => {
        let answered = 0;
        channel.onmessage = (event) => {
          if ((event as MessageEvent).data === QUIESCED && ++answered === threads) resolve();
        };
        timer = setTimeout(resolve, Math.min(this.#timeoutMs, SETUP_LIMIT_MS) + 5000);
        channel.postMessage(CLOSING);
      });
    } finally {
      clearTimeout(timer);
      channel.close();
    }
  }

  /**
   * Runs `task` on a thread: its result, or the HearthError of a deadline, a limit or a thread that
   * failed. `ended`, once the task has ended on its thread (a sandboxed one may end after its
   * caller was answered: #runToEnd), or was never run; for threads without isolates, once piscina
   * gave up on it (a thread it terminates may still be winding down: no exchange is used there).
   */
  async run(
    task: HookTask,
    phase: HookFailure['phase'],
    options: HookCallOptions,
    transfer: ArrayBufferLike[] = [],
    ended: () => void = () => undefined,
  ): Promise<unknown> {
    const now = performance.now();
    // Setup (loading the hook, a vocabulary, a label list) runs once and may take longer than a call.
    const limit = phase === 'setup' ? Math.max(this.#timeoutMs, SETUP_LIMIT_MS) : this.#timeoutMs;
    if (options.deadline !== undefined && options.deadline <= now) {
      ended();
      throw new DeadlineExceededError(`the request's deadline passed before the hook's ${phase} ran`);
    }
    const transferList = [...new Set(transfer)].filter(
      (b): b is ArrayBuffer => b instanceof ArrayBuffer && b.byteLength > 0,
    );
    if (this.#closeChannel) return this.#runToEnd(task, phase, options, transferList, ended);
    // Two clocks: the request's deadline runs from now; the hook's limit runs from when its code
    // starts on the thread (hook-clock.ts). Either one past ends the task, and with it the thread.
    const abort = new AbortController();
    let passed: 'deadline' | 'limit' | undefined;
    const end = (why: 'deadline' | 'limit') => () => {
      passed ??= why;
      abort.abort();
    };
    const deadline = options.deadline === undefined ? undefined : setTimeout(end('deadline'), options.deadline - now);
    const progress = new Int32Array(new SharedArrayBuffer(4));
    const stopClock = watchHookTime(progress, limit, SETUP_LIMIT_MS, end('limit'));
    const signal = options.signal ? AbortSignal.any([options.signal, abort.signal]) : abort.signal;
    try {
      return await this.#piscina.run({ ...task, progress }, { signal, transferList });
    } catch (error) {
      if (options.signal?.aborted) throw error;
      if (passed === 'deadline')
        throw new DeadlineExceededError(
          `the request's deadline passed while the hook's ${phase} ran; its thread was replaced`,
          { cause: error },
        );
      if (passed === 'limit')
        throw new HookError(
          `hook ${this.#name} failed in ${phase}: ran past its ${limit} ms limit and was terminated`,
          {
            cause: error,
            reason: phase,
          },
        );
      throw this.#threadFailure(error, phase);
    } finally {
      clearTimeout(deadline);
      stopClock();
      ended();
    }
  }

  /**
   * A sandboxed hook's task, run to its end: its thread is never ended from here, because
   * isolated-vm aborts the whole process when a thread dies inside an isolate (seen: a group of
   * pre calls past the limit, in bench:ceiling). The isolate stops each call at the hook's limit
   * itself; a deadline or a cancellation answers the caller at once, and the thread finishes.
   */
  async #runToEnd(
    task: HookTask,
    phase: HookFailure['phase'],
    options: HookCallOptions,
    transferList: ArrayBuffer[],
    ended: () => void,
  ): Promise<unknown> {
    const work = this.#piscina
      .run(task, { transferList })
      .catch((error: unknown) => {
        throw this.#threadFailure(error, phase);
      })
      .finally(ended);
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const early = new Promise<never>((_, reject) => {
      if (options.deadline !== undefined)
        timer = setTimeout(
          () => reject(new DeadlineExceededError(`the request's deadline passed while the hook's ${phase} ran`)),
          options.deadline - performance.now(),
        );
      onAbort = () => reject(new CancelledError(`the request was cancelled while the hook's ${phase} ran`));
      options.signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([work, early]);
    } finally {
      clearTimeout(timer);
      if (onAbort) options.signal?.removeEventListener('abort', onAbort);
      work.catch(() => undefined);
    }
  }

  /** A thread that failed: out of memory, or crashed. */
  #threadFailure(error: unknown, phase: HookFailure['phase']): HearthError {
    const code = (error as { code?: string }).code;
    const why =
      code === 'ERR_WORKER_OUT_OF_MEMORY'
        ? 'ran out of memory; its thread was replaced'
        : `its thread failed: ${(error as Error).message}`;
    return new HookError(`hook ${this.#name} failed in ${phase}: ${why}`, { cause: error, reason: phase });
  }
}

/** The longest failure message of a hook kept (its frames, cut apart: stack.ts). */
const MAX_MESSAGE = 8 * 1024;

/** A failure of hook `name` (whose limit is `timeoutMs`) as its caller is told it. */
export function hookFailure(f: HookFailure, name: string, timeoutMs: number): HearthError {
  if (f.kind === 'input') return new InvalidInputError(f.message, { reason: f.reason });
  // The isolate stopped a call at the hook's time limit (inline, or on a thread before its abort).
  const message = clipBytes(f.message, MAX_MESSAGE);
  const why = /timed out/i.test(message) ? `ran past its ${timeoutMs} ms limit and was stopped` : message;
  // The first line is what the caller is told; the frames after it go to the function's log.
  const frames = f.stack ? `\n${f.stack}` : '';
  return new HookError(`hook ${name} failed in ${f.phase}: ${why}${frames}`, { reason: f.phase });
}
