/**
 * A pool: N instances of one function version, its hook threads and its dynamic batcher.
 *
 * A request goes: pre (hook thread) → batcher queue → a batch on an idle instance (the addon
 * concatenates the requests' tensors and runs one forward off the JS thread) → outputs split back
 * by rows, zero-copy views → post for the whole batch in one hook task → each request's response.
 * Raw tensor requests (infer(), for KServe) skip pre and post.
 *
 * Lifecycle: cold → loading → warm → draining → stopped, or failed when the model or hook cannot
 * start; every change is an event with a timestamp. Requests may arrive while the pool is cold or
 * loading: they wait in the queue until an instance is warm (up to their deadline).
 *
 * Instances on one device share the model's weights (Model.share()); what they share besides —
 * device, binding, cold start, capacity — is the model's state (model-state.ts).
 */
import type { HearthError } from '../../sdk/errors.js';
import { InvalidInputError, toHearthError, UnavailableError } from '../../sdk/errors.js';
import type { TensorsByName } from '../../sdk/tensor.js';
import type { BatchEntry, Clock } from '../batcher/index.js';
import { DynamicBatcher, systemClock } from '../batcher/index.js';
import type { Model } from '../engine/index.js';
import type { HookPool, PreOutcome, RawRequest } from '../hooks/index.js';
import { batchSignature, checkTensors } from '../tensors/index.js';
import { lentThreads } from './capacity.js';
import { Instances } from './instances.js';
import { PoolLifecycle } from './lifecycle.js';
import { poolArtifacts } from './loader.js';
import { ModelState } from './model-state.js';
import { outputLimit } from './output-checks.js';
import type { Pending } from './pending.js';
import { answerBatch, heldInputs, settleable } from './pending.js';
import { SequenceLanes } from './sequences.js';
import { countForward, countOutcome, newCounters, observe, RecentLatencies } from './stats.js';
import type { CallOptions, InvokeResponse, PoolOptions, PoolStats, ServingPool } from './types.js';

const US = 1000;
export class Pool extends PoolLifecycle implements ServingPool {
  readonly #options: PoolOptions;
  readonly #clock: Clock;
  readonly #batcher: DynamicBatcher<Pending>;
  readonly #counters = newCounters();
  readonly #recent = new RecentLatencies();
  readonly #instances: Instances;
  #loading = 0;
  #hooks: HookPool | undefined;
  #pending = 0;
  /** How long the last batch's forward took (ms): lentThreads lends a long one every core. */
  #lastForwardMs = 0;
  /** Requests in their pre hook, and in post (whose callers, in a closed loop, send again soon). */
  #inPre = 0;
  #inPost = 0;
  #starting: Promise<void> | undefined;
  /** What the instances share: device, binding, cold start, capacity. */
  readonly #model: ModelState;
  /** performance.now() of the last request that arrived. */
  #lastRequestAt = performance.now();
  /** When the first request that found the pool cold arrived, until it runs. */
  #coldWaitFrom: number | undefined;
  /** Stateful models (spec.sequence): sequences placed on instances, batches per instance. */
  readonly #sequences: SequenceLanes | undefined;

  constructor(options: PoolOptions) {
    super(options.spec, options.version);
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#model = new ModelState(this.spec);
    this.#batcher = new DynamicBatcher<Pending>(
      { ...this.spec.batching, maxBatchSize: this.spec.maxBatchSize },
      (batch) => void this.#run(batch),
      this.#clock,
      () => this.#inPre + this.#inPost,
    );
    this.#instances = new Instances(this.spec, (rows, limitMs) => {
      this.event('state', this.state, `a forward of ${rows} row(s) ran past its ${limitMs} ms limit`);
      this.emit('hung', { rows, limitMs });
    });
    const { sequence } = this.spec;
    if (sequence)
      this.#sequences = new SequenceLanes(
        { ...this.spec, sequence },
        this.#clock,
        this.#instances,
        () => this.#model.binding,
        this.#counters,
      );
  }

  get device(): string {
    return this.#model.device;
  }

  /** Loads the model and the hook, then `count` instances (spec.instances.count by default). */
  start(count = this.spec.instances.count): Promise<void> {
    this.#starting ??= this.#start(count);
    return this.#starting;
  }

  async #start(count: number): Promise<void> {
    this.setState('loading');
    try {
      const first = await this.#model.load(
        {
          version: this.version,
          artifacts: () => poolArtifacts(this.#options),
          hooks: this.#options.hooks,
          warmupRuns: this.#options.warmupRuns,
          waiting: () => this.#pending + (this.#options.waitingOutside ?? 0) > 0,
          loading: (delta) => {
            this.#loading += delta;
          },
          hooksReady: (hooks) => {
            this.#hooks = hooks;
          },
        },
        this.#options.ownProcess === true,
      );
      this.#addLoaded(first);
      for (let i = 1; i < count; i++) this.#addLoaded(first.share());
      this.setState('warm');
      const c = this.#model.coldStart!;
      this.event(
        'cold-start',
        'warm',
        `fetch ${c.fetch.toFixed(3)} s (${c.source ?? 'local'}), load ${c.load.toFixed(3)} s, warm-up ${c.warmup.toFixed(3)} s`,
      );
      this.emit('cold-start', c);
    } catch (error) {
      const reason = toHearthError(error);
      this.event('load-failed', 'failed', reason.message);
      this.setState('failed');
      this.#batcher.rejectAll(
        new UnavailableError(`function ${this.spec.name} v${this.version} failed to load: ${reason.message}`, {
          cause: reason,
        }),
      );
      await this.#hooks?.close();
      throw reason;
    }
  }

  /** Requests queued while `arrive` runs are batched in one decision, after it (DynamicBatcher.gather). */
  gather(arrive: () => void): void {
    this.#batcher.gather(arrive);
  }

  /** Adds an instance over the same weights (the autoscaler's scale-up). */
  addInstance(): void {
    const source = this.#instances.at(0);
    if (!source || this.state !== 'warm')
      throw new UnavailableError(
        `function ${this.spec.name} v${this.version} is ${this.state}; instances are added to a warm pool`,
      );
    this.#addLoaded(source.share());
  }

  /** How many more instances the device can hold now (ModelState.room). */
  room(): number {
    return this.#model.room(this.#instances.total);
  }

  /** performance.now() the last request arrived at this pool or was answered. */
  get lastRequestAt(): number {
    return this.#lastRequestAt;
  }

  /** Removes an idle instance (the autoscaler's scale-down); false when none is idle or only one is left. */
  removeInstance(): boolean {
    // A sequence model's instances hold their sequences' state: they stay until the pool stops.
    if (this.#sequences) return false;
    if (this.#instances.total <= 1 || this.#instances.idle === 0 || !this.#batcher.removeIdleInstance()) return false;
    this.#instances.removeIdle();
    this.event('instance-removed', this.state);
    return true;
  }

  #addLoaded(instance: Model): void {
    this.#instances.add(instance);
    this.event('instance-added', this.state, `${this.#instances.total} instance(s) on ${this.#model.device}`);
    if (this.#sequences) this.#sequences.addLane();
    else this.#batcher.addInstance();
  }

  /** A request through the hooks: body in, response out. */
  async invoke(request: RawRequest, options: CallOptions = {}): Promise<InvokeResponse> {
    return this.#track(options, async () => {
      this.#accepting();
      if (this.#sequences)
        throw new InvalidInputError(
          `${this.spec.name} is a sequence (stateful) model: send KServe infer requests with the sequence_id, sequence_start and sequence_end parameters`,
        );
      if (!this.#hooks && this.#starting) await this.untilStarted(this.#starting, options.deadline);
      const hooks = this.#hooks;
      if (!hooks) throw new UnavailableError(`function ${this.spec.name} v${this.version} is ${this.state}`);
      const t0 = performance.now();
      this.#inPre++;
      let pre: PreOutcome;
      try {
        // Alone in the pool, the request's pre runs without a thread hop where the hooks allow it.
        pre = await hooks.pre(request, { ...options, inline: this.#pending === 1 });
      } catch (error) {
        queueMicrotask(() => this.#batcher.poke());
        throw error;
      } finally {
        this.#inPre--;
      }
      observe(this.#counters.durations.pre, (performance.now() - t0) * US);
      try {
        const raw = { body: pre.body, contentType: request.contentType };
        return (await this.#enqueue(pre.tensors, raw, options, pre.hold)) as InvokeResponse;
      } finally {
        pre.release?.(); // its tensors' place in the hook pool's exchange (a forward holds it too: #run)
      }
    });
  }

  /** Raw tensors in, raw tensors out, no hooks (KServe v2, as Triton serves them). */
  async infer(tensors: TensorsByName, options: CallOptions = {}): Promise<TensorsByName> {
    return this.#track(options, async () => {
      this.#accepting();
      if (this.#sequences) return this.#sequences.enqueue(tensors, options);
      if (options.sequence)
        throw new InvalidInputError(`${this.spec.name} is not a sequence model: send no sequence_id`);
      return (await this.#enqueue(tensors, undefined, options)) as TensorsByName;
    });
  }

  #accepting(): void {
    if (this.state === 'draining' || this.state === 'stopped' || this.state === 'failed') {
      throw new UnavailableError(`function ${this.spec.name} v${this.version} is ${this.state} and takes no requests`);
    }
  }

  async #track<T>(options: CallOptions, body: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    this.#lastRequestAt = t0;
    if (
      (this.state === 'cold' || this.state === 'loading') &&
      this.#coldWaitFrom === undefined &&
      !this.#model.coldStart
    )
      this.#coldWaitFrom = t0;
    this.#pending++;
    let failure: HearthError | undefined;
    try {
      return await body();
    } catch (error) {
      failure = toHearthError(error);
      throw failure;
    } finally {
      this.#pending--;
      this.#lastRequestAt = performance.now();
      const us = (this.#lastRequestAt - t0) * US;
      const n = options.requests ?? 1;
      countOutcome(this.#counters, us, failure, n);
      for (let i = 0; i < n; i++) this.#recent.add(us);
      if (this.#pending === 0) this.emit('idle');
    }
  }

  #enqueue(
    tensors: TensorsByName,
    request: RawRequest | undefined,
    options: CallOptions,
    hold?: Pending['hold'],
  ): Promise<TensorsByName | InvokeResponse> {
    const rows = checkTensors(tensors, this.spec.inputs, this.spec.maxBatchSize);
    return settleable(tensors, request, options, (pending, remainingMs) => {
      pending.hold = hold;
      this.#batcher.enqueue(
        pending,
        {
          rows,
          signature: batchSignature(tensors, this.spec.inputs, this.spec.maxBatchSize),
          priority: options.priority,
          timeoutUs: remainingMs === undefined ? undefined : Math.max(1, Math.floor(remainingMs * US)),
          signal: options.signal,
          requests: pending.requests,
        },
        (error) => pending.reject(error),
      );
    });
  }

  async #run(batch: BatchEntry<Pending>[]): Promise<void> {
    const instance = this.#instances.takeIdle();
    this.#coldWaitOver();
    const now = this.#clock.now();
    for (const entry of batch) observe(this.#counters.durations.queue, now - entry.enqueuedAt, entry.payload.requests);
    // Requests going on to post count as on their way back (closed-loop callers send again soon) from
    // before the instance is released, so the batcher can wait for them rather than run a straggler.
    const toPost = batch.filter((e) => e.payload.request).length;
    const { inputs, letGo } = heldInputs(batch.map((e) => e.payload));
    const t0 = performance.now();
    let outputs: TensorsByName[] | HearthError;
    try {
      outputs = await this.#instances.run(
        instance,
        this.#model.binding,
        inputs,
        [],
        batch.map((e) => e.rows),
        lentThreads(this.spec, this.#model.device, {
          requests: batch.length,
          pending: this.#pending,
          alone: this.#instances.total - this.#instances.idle === 1,
          lastForwardMs: this.#lastForwardMs,
        }),
        batch.map((e) => outputLimit(this.spec, e.payload.request !== undefined) * e.payload.requests),
      );
    } catch (error) {
      outputs = toHearthError(error);
    } finally {
      letGo();
      this.#lastForwardMs = performance.now() - t0;
      // The instance is free as soon as its forward is done; post runs while it takes the next batch.
      this.#instances.free(instance);
      this.#inPost += toPost;
      this.#batcher.release();
    }
    const rows = batch.reduce((n, e) => n + e.rows, 0);
    const requests = batch.reduce((n, e) => n + e.payload.requests, 0);
    countForward(this.#counters, rows, requests, (performance.now() - t0) * US);
    try {
      if (outputs instanceof Error) for (const e of batch) e.payload.reject(outputs);
      else {
        const postUs = await answerBatch(
          batch.map((e) => e.payload),
          outputs,
          this.#hooks,
          this.#pending === batch.length,
        );
        if (postUs !== undefined) observe(this.#counters.durations.post, postUs);
      }
    } finally {
      this.#inPost -= toPost;
      // A wait that counted on these requests is re-judged without them.
      queueMicrotask(() => this.#batcher.poke());
    }
  }

  /** The first request that found the pool cold now runs: its wait is the cold start's queue phase. */
  #coldWaitOver(): void {
    const coldStart = this.#model.coldStart;
    if (this.#coldWaitFrom === undefined || !coldStart) return;
    const queue = (performance.now() - this.#coldWaitFrom) / 1000;
    this.#coldWaitFrom = undefined;
    coldStart.queue = queue;
    this.event('cold-start', this.state, `the first request waited ${queue.toFixed(3)} s for its forward`);
    this.emit('cold-start-queue', queue);
  }

  /** Finishes what is queued and running, refuses new work, then stops. */
  async drain(): Promise<void> {
    if (this.state === 'stopped') return;
    this.setState('draining');
    // Everything accepted before now (in a hook, queued or running) finishes; new requests are
    // refused at the door (#accepting).
    await new Promise<void>((resolve) => {
      if (this.#pending === 0) resolve();
      else this.once('idle', resolve);
    });
    await this.#batcher.drain();
    await this.stop();
  }

  /** Stops at once: queued requests fail with UnavailableError, instances and hook threads go. */
  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    this.#batcher.rejectAll(new UnavailableError(`function ${this.spec.name} v${this.version} stopped`));
    this.#sequences?.close();
    this.#instances.disposeAll();
    await this.#hooks?.close();
    this.#hooks = undefined;
    this.setState('stopped');
  }

  /** Its counters are this process's own, always current. */
  async refresh(): Promise<void> {}

  stats(): PoolStats {
    const c = this.#counters;
    const latency = this.#recent.percentiles();
    return {
      ...structuredClone(c),
      state: this.state,
      instances: {
        total: this.#instances.total,
        idle: this.#instances.idle,
        busy: this.#instances.total - this.#instances.idle,
        loading: this.#loading,
      },
      queueDepth: this.#batcher.queueDepth + (this.#sequences?.queueDepth ?? 0),
      pending: this.#pending,
      hookThreads: this.#hooks?.threads ?? 0,
      ...(this.#model.coldStart ? { coldStart: this.#model.coldStart } : {}),
      ...(latency ? { latency } : {}),
      ...this.#model.gpuMemory(),
    };
  }
}
