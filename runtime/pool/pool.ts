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
 * Instances on one device share the model's weights (Model.share()).
 */
import type { HearthError } from '../../sdk/errors.js';
import {
  InferenceError,
  InvalidInputError,
  ModelLoadError,
  toHearthError,
  UnavailableError,
} from '../../sdk/errors.js';
import type { HookTensors } from '../../sdk/hook.js';
import type { Tensor } from '../../sdk/tensor.js';
import type { BatchEntry, Clock } from '../batcher/index.js';
import { DynamicBatcher, SequenceRouter, systemClock } from '../batcher/index.js';
import type { SequenceRow } from '../batcher/index.js';
import type { ForwardResult, Model } from '../engine/index.js';
import { devices, setIntraOpThreads } from '../engine/index.js';
import type { RawRequest } from '../hooks/index.js';
import type { HookPool } from '../hooks/index.js';
import { batchSignature, checkTensors } from '../tensors/index.js';
import { countForward, countOutcome, newCounters, observe, RecentLatencies } from './stats.js';
import type { IoBinding } from './io-binding.js';
import { room } from './capacity.js';
import { PoolLifecycle } from './lifecycle.js';
import { loadVersion } from './loader.js';
import type { Pending } from './pending.js';
import { answerBatch, settleable } from './pending.js';
import type { ColdStart, InvokeOptions, InvokeResponse, PoolArtifacts, PoolOptions, PoolStats } from './types.js';
import { checkSequenceRequest, forwardArgs, sequenceControls } from './pool-tensors.js';
import { splitOutputs } from './split.js';

const US = 1000;

export class Pool extends PoolLifecycle {
  readonly #options: PoolOptions;
  readonly #clock: Clock;
  readonly #batcher: DynamicBatcher<Pending>;
  readonly #counters = newCounters();
  readonly #recent = new RecentLatencies();
  readonly #instances: Model[] = [];
  readonly #idle: Model[] = [];
  #loading = 0;
  #hooks: HookPool | undefined;
  #pending = 0;
  /** Requests in their pre hook, and in post (whose callers, in a closed loop, send again soon). */
  #inPre = 0;
  #inPost = 0;
  #starting: Promise<void> | undefined;
  #device = 'cpu';
  #coldStart: ColdStart | undefined;
  /** performance.now() of the last request that arrived. */
  #lastRequestAt = performance.now();
  /** When the first request that found the pool cold arrived, until it runs. */
  #coldWaitFrom: number | undefined;
  /** Device memory one more instance is estimated to take (measured at the first load). */
  #instanceBytes = 0;
  /** How the spec's tensors bind to forward()'s arguments and outputs (known once the model loads). */
  #binding: IoBinding | undefined;
  /** Stateful models (spec.sequence): sequences placed on instances, batches per instance. */
  readonly #sequences: SequenceRouter<Pending> | undefined;

  constructor(options: PoolOptions) {
    super(options.spec, options.version);
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#batcher = new DynamicBatcher<Pending>(
      { ...this.spec.batching, maxBatchSize: this.spec.maxBatchSize },
      (batch) => void this.#run(batch),
      this.#clock,
      () => this.#inPre + this.#inPost,
    );
    if (options.spec.sequence) {
      this.#sequences = new SequenceRouter<Pending>(
        { ...options.spec.sequence, batchSize: Math.max(1, options.spec.maxBatchSize), model: options.spec.name },
        (lane, rows) => void this.#runSequence(lane, rows),
        this.#clock,
      );
    }
  }

  get device(): string {
    return this.#device;
  }

  /** Loads the model and the hook, then `count` instances (spec.instances.count by default). */
  start(count = this.spec.instances.count): Promise<void> {
    this.#starting ??= this.#start(count);
    return this.#starting;
  }

  async #start(count: number): Promise<void> {
    this.setState('loading');
    try {
      const { spec } = this;
      if (spec.instances.threads > 0) setIntraOpThreads(spec.instances.threads);
      this.#device =
        spec.instances.device === 'auto' ? (devices().cudaAvailable ? 'cuda:0' : 'cpu') : spec.instances.device;
      const loaded = await loadVersion({
        spec,
        version: this.version,
        device: this.#device,
        artifacts: () => this.#artifacts(),
        hooks: this.#options.hooks,
        warmupRuns: this.#options.warmupRuns,
        waiting: () => this.#pending + (this.#options.waitingOutside ?? 0) > 0,
        loading: (delta) => {
          this.#loading += delta;
        },
        hooksReady: (hooks) => {
          this.#hooks = hooks;
        },
      });
      this.#binding = loaded.binding;
      this.#instanceBytes = loaded.instanceBytes;
      this.#coldStart = loaded.coldStart;
      this.#addLoaded(loaded.first);
      for (let i = 1; i < count; i++) this.#addLoaded(loaded.first.share());
      this.setState('warm');
      const c = this.#coldStart;
      this.event(
        'cold-start',
        'warm',
        `fetch ${c.fetch.toFixed(3)} s (${c.source ?? 'local'}), load ${c.load.toFixed(3)} s, warm-up ${c.warmup.toFixed(3)} s`,
      );
      this.emit('cold-start', this.#coldStart);
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

  /** The model and hook to load: from the `artifacts` option, else `model` and `hookBundle`. */
  #artifacts(): Promise<PoolArtifacts> {
    const { artifacts, model, hookBundle } = this.#options;
    if (artifacts) return artifacts();
    if (model === undefined)
      return Promise.reject(new ModelLoadError(`function ${this.spec.name}: the pool was given no model`));
    return Promise.resolve({ model, hookBundle });
  }

  /** Requests queued while `arrive` runs are batched in one decision, after it (DynamicBatcher.gather). */
  gather(arrive: () => void): void {
    this.#batcher.gather(arrive);
  }

  /** Adds an instance over the same weights (the autoscaler's scale-up). */
  addInstance(): void {
    const source = this.#instances[0];
    if (!source || this.state !== 'warm')
      throw new UnavailableError(
        `function ${this.spec.name} v${this.version} is ${this.state}; instances are added to a warm pool`,
      );
    this.#addLoaded(source.share());
  }

  /**
   * How many more instances the device can hold now: what its free memory takes, keeping a tenth
   * spare, and on CPU no more than the engine's lanes (cores ÷ intra-op threads): an instance past
   * those only shares a lane, splitting batches without adding compute.
   */
  room(): number {
    return room(this.#device, this.#instanceBytes, this.#instances.length);
  }

  /** performance.now() of the last request that arrived at this pool. */
  get lastRequestAt(): number {
    return this.#lastRequestAt;
  }

  /** Removes an idle instance (the autoscaler's scale-down); false when none is idle or only one is left. */
  removeInstance(): boolean {
    // A sequence model's instances hold their sequences' state: they stay until the pool stops.
    if (this.#sequences) return false;
    if (this.#instances.length <= 1 || this.#idle.length === 0 || !this.#batcher.removeIdleInstance()) return false;
    const instance = this.#idle.pop()!;
    this.#instances.splice(this.#instances.indexOf(instance), 1);
    instance.dispose();
    this.event('instance-removed', this.state);
    return true;
  }

  #addLoaded(instance: Model): void {
    this.#instances.push(instance);
    this.#idle.push(instance);
    this.event('instance-added', this.state, `${this.#instances.length} instance(s) on ${this.#device}`);
    if (this.#sequences) this.#sequences.addLane();
    else this.#batcher.addInstance();
  }

  /** A request through the hooks: body in, response out. */
  async invoke(request: RawRequest, options: InvokeOptions = {}): Promise<InvokeResponse> {
    return this.#track(async () => {
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
      let pre: { tensors: HookTensors; body: Uint8Array };
      try {
        pre = await hooks.pre(request, options);
      } catch (error) {
        queueMicrotask(() => this.#batcher.poke());
        throw error;
      } finally {
        this.#inPre--;
      }
      observe(this.#counters.durations.pre, (performance.now() - t0) * US);
      return (await this.#enqueue(
        pre.tensors,
        { body: pre.body, contentType: request.contentType },
        options,
      )) as InvokeResponse;
    });
  }

  /** Raw tensors in, raw tensors out, no hooks (KServe v2, as Triton serves them). */
  async infer(tensors: HookTensors, options: InvokeOptions = {}): Promise<HookTensors> {
    return this.#track(async () => {
      this.#accepting();
      if (this.#sequences) return this.#enqueueSequence(tensors, options);
      if (options.sequence)
        throw new InvalidInputError(`${this.spec.name} is not a sequence model: send no sequence_id`);
      return (await this.#enqueue(tensors, undefined, options)) as HookTensors;
    });
  }

  /** A request of a sequence: one row, queued behind its sequence's earlier requests. */
  #enqueueSequence(tensors: HookTensors, options: InvokeOptions): Promise<HookTensors> {
    const flags = checkSequenceRequest(this.spec, tensors, options.sequence);
    return settleable(tensors, undefined, options, (pending) =>
      this.#sequences!.enqueue(pending, flags, (error) => pending.reject(error)),
    ) as Promise<HookTensors>;
  }

  #accepting(): void {
    if (this.state === 'draining' || this.state === 'stopped' || this.state === 'failed') {
      throw new UnavailableError(`function ${this.spec.name} v${this.version} is ${this.state} and takes no requests`);
    }
  }

  async #track<T>(body: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    this.#lastRequestAt = t0;
    if ((this.state === 'cold' || this.state === 'loading') && this.#coldWaitFrom === undefined && !this.#coldStart)
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
      const us = (performance.now() - t0) * US;
      countOutcome(this.#counters, us, failure);
      this.#recent.add(us);
      if (this.#pending === 0) this.emit('idle');
    }
  }

  #enqueue(
    tensors: HookTensors,
    request: RawRequest | undefined,
    options: InvokeOptions,
  ): Promise<HookTensors | InvokeResponse> {
    const rows = checkTensors(tensors, this.spec.inputs, this.spec.maxBatchSize);
    return settleable(tensors, request, options, (pending, remainingMs) =>
      this.#batcher.enqueue(
        pending,
        {
          rows,
          signature: batchSignature(tensors, this.spec.inputs, this.spec.maxBatchSize),
          priority: options.priority,
          timeoutUs: remainingMs === undefined ? undefined : Math.max(1, Math.floor(remainingMs * US)),
          signal: options.signal,
        },
        (error) => pending.reject(error),
      ),
    );
  }

  async #run(batch: BatchEntry<Pending>[]): Promise<void> {
    const instance = this.#idle.pop()!;
    const now = this.#clock.now();
    if (this.#coldWaitFrom !== undefined && this.#coldStart) {
      const queue = (performance.now() - this.#coldWaitFrom) / 1000;
      this.#coldWaitFrom = undefined;
      this.#coldStart.queue = queue;
      this.event('cold-start', this.state, `the first request waited ${queue.toFixed(3)} s for its forward`);
      this.emit('cold-start-queue', queue);
    }
    for (const entry of batch) observe(this.#counters.durations.queue, now - entry.enqueuedAt);
    const rows = batch.reduce((n, e) => n + e.rows, 0);
    let result: ForwardResult | undefined;
    let failure: HearthError | undefined;
    // Requests of this batch that go on to post count as on their way back (their callers, in a
    // closed loop, send again soon) from before the instance is released, so the batcher can wait
    // for them rather than run a straggler alone.
    const toPost = batch.filter((e) => e.payload.request).length;
    const t0 = performance.now();
    try {
      result = await this.#forward(
        instance,
        batch.map((e) => e.payload.tensors),
        [],
        rows,
      );
    } catch (error) {
      failure = toHearthError(error);
    } finally {
      // The instance is free as soon as its forward is done; post runs while it takes the next batch.
      this.#idle.push(instance);
      this.#inPost += toPost;
      this.#batcher.release();
    }
    try {
      await this.#finish(batch, rows, t0, result, failure);
    } finally {
      this.#inPost -= toPost;
      // A wait that counted on these requests is re-judged without them.
      queueMicrotask(() => this.#batcher.poke());
    }
  }

  /**
   * One forward of `requests` (one part each) on `instance`, under the spec's hard time limit: past
   * it the pool emits `hung` (a runner process then kills itself and is restarted; in-process, the
   * instance stays stuck and its callers get their deadline errors). A forward on a native thread
   * cannot be stopped from here.
   */
  async #forward(instance: Model, requests: HookTensors[], controls: Tensor[], rows: number): Promise<ForwardResult> {
    const args = forwardArgs(this.spec, this.#binding!, requests, controls);
    const keys = this.#binding!.dictKeys;
    const limitMs = this.spec.limits.forwardTimeoutMs;
    const timer = setTimeout(() => {
      this.event('state', this.state, `a forward of ${rows} row(s) ran past its ${limitMs} ms limit`);
      this.emit('hung', { rows, limitMs });
    }, limitMs);
    try {
      return await (requests.length === 1
        ? instance.forward(
            args.map((parts) => parts[0]!),
            keys,
          )
        : instance.forwardBatch(args, keys));
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A sequence batch on its lane's instance: the callers' rows and fillers (direct), with the
   * control inputs filled per row; each caller gets its own row back.
   */
  async #runSequence(lane: number, rows: SequenceRow<Pending>[]): Promise<void> {
    const instance = this.#instances[lane]!;
    const idle = this.#idle.indexOf(instance);
    if (idle >= 0) this.#idle.splice(idle, 1);
    const callers = rows.flatMap((r) => (r.filler ? [] : [r.payload]));
    const t0 = performance.now();
    let result: ForwardResult | undefined;
    let failure: HearthError | undefined;
    try {
      result = await this.#forward(
        instance,
        rows.map((r) => (r.filler ? {} : r.payload.tensors)),
        sequenceControls(this.spec, rows),
        rows.length,
      );
    } catch (error) {
      failure = toHearthError(error);
    }
    this.#idle.push(instance);
    countForward(this.#counters, rows.length, callers.length, (performance.now() - t0) * US);
    try {
      if (failure || !result) throw failure ?? new InferenceError('the forward returned nothing');
      const split = splitOutputs(
        this.spec,
        this.#binding!,
        result,
        rows.map(() => 1),
      );
      rows.forEach((r, i) => {
        if (!r.filler) r.payload.resolve(split[i]!);
      });
    } catch (error) {
      for (const c of callers) c.reject(toHearthError(error));
    } finally {
      this.#sequences!.release(lane);
    }
  }

  async #finish(
    batch: BatchEntry<Pending>[],
    rows: number,
    t0: number,
    result: ForwardResult | undefined,
    failure: HearthError | undefined,
  ): Promise<void> {
    countForward(this.#counters, rows, batch.length, (performance.now() - t0) * US);
    if (failure || !result) {
      for (const e of batch) e.payload.reject(failure ?? new InferenceError('the forward returned nothing'));
      return;
    }
    let split: HookTensors[];
    try {
      split = splitOutputs(
        this.spec,
        this.#binding!,
        result,
        batch.map((e) => e.rows),
      );
    } catch (error) {
      for (const e of batch) e.payload.reject(toHearthError(error));
      return;
    }
    const postUs = await answerBatch(
      batch.map((e) => e.payload),
      split,
      this.#hooks,
    );
    if (postUs !== undefined) observe(this.#counters.durations.post, postUs);
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
    for (const m of this.#instances.splice(0)) m.dispose();
    this.#idle.length = 0;
    await this.#hooks?.close();
    this.#hooks = undefined;
    this.setState('stopped');
  }

  stats(): PoolStats {
    const c = this.#counters;
    const latency = this.#recent.percentiles();
    return {
      ...structuredClone(c),
      state: this.state,
      instances: {
        total: this.#instances.length,
        idle: this.#idle.length,
        busy: this.#instances.length - this.#idle.length,
        loading: this.#loading,
      },
      queueDepth: this.#batcher.queueDepth + (this.#sequences?.queueDepth ?? 0),
      pending: this.#pending,
      hookThreads: this.#hooks?.threads ?? 0,
      ...(this.#coldStart ? { coldStart: this.#coldStart } : {}),
      ...(latency ? { latency } : {}),
    };
  }
}
