/**
 * The dynamic batcher: Triton's semantics for forming batches, with one difference in when it waits.
 *
 * Like Triton's dynamic batcher: requests queue FIFO within a priority level (level 1 first); a batch
 * is the longest run of compatible requests from the head of the queue (same signature — dtypes and
 * non-batch dims — and rows summing to at most maxBatchSize; a request of 5 rows counts as 5 and is
 * never split); of that run it takes the largest prefix whose rows are a preferred batch size, else
 * the whole run. Requests whose timeout passes while queued are rejected without running; a full
 * queue refuses new requests; a cancelled request leaves the queue.
 *
 * Unlike Triton, the delay is spent only when it can buy something. With an instance idle, the
 * batcher waits (at most maxQueueDelayUs from the oldest request) only while a preferred size — or
 * maxBatchSize when none is set — is about to fill: either the requests already on their way (the
 * pool's `incoming()`: requests in their pre hook, and requests in post whose callers will likely
 * send again) fill it, or, with several requests queued, the recent arrival rate says the missing
 * rows come in time. A request that finds an instance idle, nothing else queued and nothing on
 * its way runs at once: at concurrency 1 the batcher adds no wait. While every instance is busy,
 * requests simply queue and form the next batch.
 *
 * The batcher only decides; the pool runs each batch and calls release() when its instance is free.
 */

import type { HearthError } from '../../sdk/errors.js';
import {
  CancelledError,
  DeadlineExceededError,
  InvalidInputError,
  QueueFullError,
  UnavailableError,
} from '../../sdk/errors.js';
import type { Clock } from './clock.js';
import { systemClock } from './clock.js';

export interface BatcherOptions {
  /** 0: requests have no batch dimension and run one at a time. */
  maxBatchSize: number;
  preferredBatchSizes: readonly number[];
  maxQueueDelayUs: number;
  /** 0: unbounded. */
  maxQueueSize: number;
  /** 0: no timeout. */
  defaultTimeoutUs: number;
  priorityLevels: number;
  defaultPriorityLevel: number;
}

export interface EnqueueOptions {
  /** Rows along the batch dimension (1 when maxBatchSize is 0). */
  rows: number;
  /** Requests batch together only when their signatures are equal. */
  signature: string;
  /** 1 (highest) to priorityLevels; default defaultPriorityLevel. */
  priority?: number;
  /** Overrides defaultTimeoutUs; 0 = none. */
  timeoutUs?: number;
  signal?: AbortSignal;
  /** Callers' requests it carries (a node's gathered call): what maxQueueSize counts. Default 1. */
  requests?: number;
}

export interface BatchEntry<T> {
  readonly payload: T;
  readonly rows: number;
  readonly signature: string;
  readonly priority: number;
  readonly enqueuedAt: number;
  /** When it left the queue (µs, batcher clock). */
  dequeuedAt: number;
}

interface Queued<T> extends BatchEntry<T> {
  readonly deadline: number;
  readonly requests: number;
  readonly reject: (error: HearthError) => void;
  queued: boolean;
  cleanup?: () => void;
}

export type Dispatch<T> = (batch: BatchEntry<T>[]) => void;

/** One FIFO per priority level, with lazy removal of entries that left early. */
class Fifo<T> {
  items: Queued<T>[] = [];
  head = 0;

  push(item: Queued<T>): void {
    this.items.push(item);
  }

  compact(): void {
    while (this.head < this.items.length && !this.items[this.head]!.queued) this.head++;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }

  *live(): Generator<Queued<T>> {
    for (let i = this.head; i < this.items.length; i++) if (this.items[i]!.queued) yield this.items[i]!;
  }
}

export class DynamicBatcher<T> {
  readonly #options: BatcherOptions;
  readonly #clock: Clock;
  readonly #dispatch: Dispatch<T>;
  readonly #levels: Fifo<T>[];
  #idle = 0;
  #busy = 0;
  /** Entries queued (what batches are made of). */
  #depth = 0;
  /** Requests queued: entries weighted by the callers each carries (maxQueueSize, queueDepth). */
  #requests = 0;
  #timer: unknown = undefined;
  #timerAt = Infinity;
  #draining = false;
  #drained: (() => void)[] = [];
  /** Inside gather(): decisions wait until it returns. */
  #gathering = false;
  #deferred = false;
  // Arrival rate (rows per µs), an exponentially weighted moving average of inter-arrival gaps.
  #lastArrival = -1;
  #gapUs = Infinity;
  #rowsPerArrival = 1;

  readonly #incoming: () => number;

  /** `incoming`: requests on their way to the queue (see the class comment); none by default. */
  constructor(
    options: BatcherOptions,
    dispatch: Dispatch<T>,
    clock: Clock = systemClock,
    incoming: () => number = () => 0,
  ) {
    this.#options = options;
    this.#dispatch = dispatch;
    this.#clock = clock;
    this.#incoming = incoming;
    this.#levels = Array.from({ length: options.priorityLevels }, () => new Fifo<T>());
  }

  /** Requests waiting in the queue (a gathered call counts as the callers it carries). */
  get queueDepth(): number {
    return this.#requests;
  }

  /**
   * Runs `arrive`, which queues requests that came in together (a runner reads many from one chunk
   * of its channel), and decides once, after: without it, the first request to reach an idle
   * instance would leave alone and the rest would wait behind it.
   */
  gather(arrive: () => void): void {
    if (this.#gathering) {
      arrive();
      return;
    }
    this.#gathering = true;
    try {
      arrive();
    } finally {
      this.#gathering = false;
      if (this.#deferred) {
        this.#deferred = false;
        this.#schedule();
      }
    }
  }

  /** Re-evaluates a wait when requests on their way arrive or go elsewhere. */
  poke(): void {
    this.#schedule();
  }

  /** An instance joined (or became free for the first time). */
  addInstance(): void {
    this.#idle++;
    this.#schedule();
  }

  /** An idle instance leaves; false if none is idle (the caller retries after a release). */
  removeIdleInstance(): boolean {
    if (this.#idle === 0) return false;
    this.#idle--;
    return true;
  }

  /** The instance that ran a batch is free again. */
  release(): void {
    this.#busy--;
    this.#idle++;
    this.#schedule();
    this.#checkDrained();
  }

  /**
   * Queues a request. `reject` is called if it leaves the queue without running (timeout, cancel,
   * drain); throws QueueFullError, UnavailableError or InvalidInputError at once when it cannot queue.
   */
  enqueue(payload: T, options: EnqueueOptions, reject: (error: HearthError) => void): void {
    const o = this.#options;
    if (this.#draining) throw new UnavailableError('the pool is draining and takes no new requests');
    if (o.maxBatchSize > 0 && options.rows > o.maxBatchSize) {
      throw new InvalidInputError(`the request has ${options.rows} rows but maxBatchSize is ${o.maxBatchSize}`, {
        reason: 'ERR_SHAPE',
      });
    }
    const requests = options.requests ?? 1;
    if (o.maxQueueSize > 0 && this.#requests + requests > o.maxQueueSize) {
      throw new QueueFullError(`the queue is full (${o.maxQueueSize} requests); retry later`);
    }
    const priority = options.priority ?? o.defaultPriorityLevel;
    if (!Number.isInteger(priority) || priority < 1 || priority > o.priorityLevels) {
      throw new InvalidInputError(`priority must be an integer from 1 to ${o.priorityLevels}`, { reason: 'priority' });
    }
    if (options.signal?.aborted) throw new CancelledError('the request was cancelled before it was queued');
    const now = this.#clock.now();
    const timeout = options.timeoutUs ?? o.defaultTimeoutUs;
    const entry: Queued<T> = {
      payload,
      rows: o.maxBatchSize > 0 ? options.rows : 1,
      signature: options.signature,
      priority,
      enqueuedAt: now,
      dequeuedAt: -1,
      deadline: timeout > 0 ? now + timeout : Infinity,
      requests,
      reject,
      queued: true,
    };
    if (options.signal) {
      const signal = options.signal;
      const onAbort = (): void => this.#leave(entry, new CancelledError('the request was cancelled while queued'));
      signal.addEventListener('abort', onAbort, { once: true });
      entry.cleanup = () => signal.removeEventListener('abort', onAbort);
    }
    this.#noteArrival(now, entry.rows);
    this.#levels[priority - 1]!.push(entry);
    this.#depth++;
    this.#requests += requests;
    this.#schedule();
  }

  /** Refuses new requests; resolves once the queue is empty and every batch has been released. */
  drain(): Promise<void> {
    this.#draining = true;
    return new Promise((resolve) => {
      this.#drained.push(resolve);
      this.#checkDrained();
    });
  }

  /** Rejects everything still queued (pool stopping). */
  rejectAll(error: HearthError): void {
    for (const level of this.#levels) for (const entry of level.live()) this.#leave(entry, error);
  }

  #noteArrival(now: number, rows: number): void {
    if (this.#lastArrival >= 0) {
      const gap = Math.max(1, now - this.#lastArrival);
      this.#gapUs = this.#gapUs === Infinity ? gap : 0.8 * this.#gapUs + 0.2 * gap;
    }
    this.#rowsPerArrival = 0.8 * this.#rowsPerArrival + 0.2 * rows;
    this.#lastArrival = now;
  }

  #leave(entry: Queued<T>, error: HearthError): void {
    if (!entry.queued) return;
    entry.queued = false;
    entry.cleanup?.();
    this.#depth--;
    this.#requests -= entry.requests;
    entry.reject(error);
    this.#checkDrained();
  }

  #checkDrained(): void {
    if (this.#draining && this.#depth === 0 && this.#busy === 0) {
      for (const resolve of this.#drained.splice(0)) resolve();
    }
  }

  /** The run of compatible requests at the head of the queue, in order. */
  #candidates(): Queued<T>[] {
    const max = this.#options.maxBatchSize;
    const run: Queued<T>[] = [];
    let rows = 0;
    for (const level of this.#levels) {
      level.compact();
      for (const entry of level.live()) {
        if (run.length > 0 && (max === 0 || entry.signature !== run[0]!.signature || rows + entry.rows > max))
          return run;
        run.push(entry);
        rows += entry.rows;
      }
    }
    return run;
  }

  #schedule(): void {
    if (this.#gathering) {
      this.#deferred = true;
      return;
    }
    const now = this.#clock.now();
    let wakeAt = Infinity;
    // Requests whose timeout has passed leave first; the earliest remaining timeout wakes us.
    for (const level of this.#levels) {
      for (const entry of level.live()) {
        if (entry.deadline <= now)
          this.#leave(
            entry,
            new DeadlineExceededError(
              `the request waited ${Math.round((now - entry.enqueuedAt) / 1000)} ms in the queue, past its timeout`,
            ),
          );
        else wakeAt = Math.min(wakeAt, entry.deadline);
      }
    }
    while (this.#idle > 0 && this.#depth > 0) {
      const run = this.#candidates();
      const take = this.#decide(run, now);
      if (typeof take !== 'number') {
        wakeAt = Math.min(wakeAt, take.waitUntil);
        break;
      }
      const batch = run.slice(0, take);
      for (const entry of batch) {
        entry.queued = false;
        entry.cleanup?.();
        entry.dequeuedAt = now;
        this.#requests -= entry.requests;
      }
      this.#depth -= batch.length;
      this.#idle--;
      this.#busy++;
      this.#dispatch(batch);
    }
    this.#arm(wakeAt);
  }

  /** How many of `run` to dispatch now, or until when to wait. */
  #decide(run: Queued<T>[], now: number): number | { waitUntil: number } {
    const o = this.#options;
    if (o.maxBatchSize === 0) return run.length;
    const incoming = this.#incoming();
    if (run.length === 1 && this.#depth === 1 && incoming === 0) return run.length;
    const sums: number[] = [];
    let rows = 0;
    for (const entry of run) {
      rows += entry.rows;
      sums.push(rows);
    }
    const preferred = new Set(o.preferredBatchSizes);
    for (let k = sums.length; k > 0; k--) if (preferred.has(sums[k - 1]!)) return k;

    const full = rows === o.maxBatchSize || run.length < this.#depth; // the next request does not fit
    const waitUntil = run[0]!.enqueuedAt + o.maxQueueDelayUs;
    if (full || o.maxQueueDelayUs === 0 || waitUntil <= now) return run.length;
    const targets = o.preferredBatchSizes.length > 0 ? o.preferredBatchSizes : [o.maxBatchSize];
    const next = targets.filter((t) => t > rows).sort((a, b) => a - b)[0];
    if (next === undefined) return run.length;
    // About to fill: the requests on their way make up the missing rows, or (with several queued)
    // the recent arrival rate brings them before the delay runs out.
    if (rows + incoming * this.#rowsPerArrival >= next) return { waitUntil };
    if (run.length === 1) return run.length;
    const ratePerUs = this.#gapUs === Infinity ? 0 : this.#rowsPerArrival / this.#gapUs;
    const fillsAt = ratePerUs > 0 ? now + (next - rows) / ratePerUs : Infinity;
    return fillsAt <= waitUntil ? { waitUntil } : run.length;
  }

  #arm(at: number): void {
    if (at === this.#timerAt) return;
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
    this.#timerAt = at;
    if (at === Infinity) return;
    this.#timer = this.#clock.setTimer(() => {
      this.#timer = undefined;
      this.#timerAt = Infinity;
      this.#schedule();
    }, at - this.#clock.now());
  }
}
