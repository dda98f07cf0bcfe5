/**
 * A function version's pool in a runner process, as the node sees it: the same surface as Pool
 * (start, invoke, infer, instances, stats, drain, stop), each call a frame to the runner.
 *
 * Supervision: a runner that dies (a signal, an abort, killed past its memory limit) or hangs (a
 * forward past limits.forwardTimeoutMs, which the runner reports and the node answers with SIGKILL)
 * is restarted. Meanwhile the version is `restarting`: not ready, and its requests — those the
 * runner held and those that arrive — get 503 with Retry-After (none is replayed: a request the
 * runner held may have run, or may be the one that killed it). A version that keeps crashing waits
 * longer before each restart (./crash-loop.ts). Each exit is an event with its signal or exit code
 * and the runner's last log lines.
 */

import { stat } from 'node:fs/promises';

import type { HearthError } from '../../../sdk/errors.js';
import { InferenceError, toHearthError, UnavailableError } from '../../../sdk/errors.js';
import type { FunctionSpec } from '../../../sdk/spec/function-spec.js';
import { versionKey } from '../../../sdk/spec/version-key.js';
import type { TensorsByName } from '../../../sdk/tensor.js';
import type { RawRequest } from '../../hooks/index.js';
import type { CallOptions, ColdStart, InvokeResponse, PoolCounters, PoolStats, ServingPool } from '../../pool/index.js';
import { addCounters, countFailure, newCounters, observe, PoolLifecycle } from '../../pool/index.js';
import type { Snapshot } from '../wire/index.js';
import { arenaCapBytes, Gatherer, packTensors, unpackError } from '../wire/index.js';
import type { RunnerCrash } from './crash-loop.js';
import { CrashLoop } from './crash-loop.js';
import { startCharge } from './memory-budget.js';
import { RunnerCalls } from './runner-call.js';
import type { RunnerHost } from './runner-host.js';
import type { RunnerExit, RunnerMessage, RunnerProcess } from './runner-process.js';
import { describeExit } from './runner-process.js';

/** Room in a reply's frame for its header beside its outputs (their names, shapes, blob sizes). */
const REPLY_HEADER_BYTES = 2 ** 20;

/** How long after a cold start the next spare runner boots. */
const SPARE_AFTER_MS = 1500;

export interface RunnerPoolOptions {
  spec: FunctionSpec;
  version: number;
  host: RunnerHost;
  /** The version's model and hook as local files (fetched from the artifact store by the node). */
  artifacts(): Promise<{ model: string; hookBundle?: string; source?: string; secrets?: Record<string, string> }>;
}

const US = 1000;

export class RunnerPool extends PoolLifecycle implements ServingPool {
  readonly #o: RunnerPoolOptions;
  #runner: RunnerProcess | undefined;
  #starting: Promise<void> | undefined;
  #snapshot: Snapshot | undefined;
  /**
   * Whether #snapshot already holds everything asked of the runner: no call in flight and none
   * answered, no instance added or removed, since it came. An idle pool's refresh() then asks
   * nothing (the runner sends a changed snapshot by itself: ../child/serve.ts).
   */
  #fresh = false;
  /** Counters of runners that ended, and of requests the node itself failed. */
  #retired: PoolCounters = newCounters();
  #pending = 0;
  #lastRequestAt = performance.now();
  #coldWaitFrom: number | undefined;
  #coldStart: ColdStart | undefined;
  readonly #crashLoop = new CrashLoop();
  #restartTimer: NodeJS.Timeout | undefined;
  /** Why the runner last ended (while restarting). */
  #lastExit: string | undefined;
  /** Its calls to the runner: those in flight, and the failures the node made itself. */
  readonly #calls: RunnerCalls;
  /** This turn's infer requests, gathered into calls. */
  readonly #gather: Gatherer;

  constructor(options: RunnerPoolOptions) {
    super(options.spec, options.version);
    this.#o = options;
    this.#calls = new RunnerCalls(options.spec.limits.maxResponseMb * 2 ** 20);
    this.#gather = new Gatherer(options.spec);
  }

  get device(): string {
    return this.#snapshot?.device ?? this.spec.instances.device;
  }

  get lastRequestAt(): number {
    return this.#lastRequestAt;
  }

  /** The runner's process id (while it has one). */
  get pid(): number | undefined {
    return this.#runner?.pid;
  }

  start(): Promise<void> {
    this.#starting ??= this.#boot(true);
    return this.#starting;
  }

  /** Fetches the artifacts and takes a runner (the spare) at once, then loads the version in it. */
  async #boot(first: boolean): Promise<void> {
    // A restart stays `restarting` (not ready) until it is warm again.
    this.setState(first ? 'loading' : 'restarting');
    const t0 = performance.now();
    const taken = this.#o.host.take(this.#key);
    let runner: RunnerProcess | undefined;
    try {
      const artifacts = await this.#o.artifacts();
      const fetch = (performance.now() - t0) / 1000;
      runner = await taken;
      const waited = Math.max(0, (performance.now() - t0) / 1000 - fetch);
      if (this.state === 'stopped' || this.state === 'draining')
        throw new UnavailableError(`function ${this.spec.name} v${this.version} stopped while it loaded`);
      this.#runner = runner;
      runner.label = this.#key;
      runner.onMessage = (frame) => this.#message(runner!, frame);
      // Held against the node's budget first: past it the start is refused, naming the numbers.
      const limitBytes = this.spec.limits.runnerMemoryMb * 2 ** 20;
      const startBytes = startCharge(limitBytes, (await stat(artifacts.model)).size);
      await this.#o.host.admit(runner, { limitBytes, startBytes }, `function ${this.#key}`);
      await runner.watchMemory(this.spec.limits.runnerMemoryMb * 2 ** 20);
      runner.capArena(arenaCapBytes(this.spec.limits.runnerMemoryMb));
      // The most a reply may carry: a gathered call's callers' outputs (up to maxBatchSize of them).
      runner.capFrames(Math.max(1, this.spec.maxBatchSize) * this.#calls.maxReplyBytes + REPLY_HEADER_BYTES);
      void runner.exited.then((exit) => this.#exited(runner!, exit));
      const placed = await this.#o.host.place(runner, artifacts);
      const reply = await runner.request({
        t: 'start',
        spec: this.spec,
        version: this.version,
        ...placed,
        waiting: this.#pending,
        ...(artifacts.secrets ? { secrets: artifacts.secrets } : {}),
      });
      if (!reply.header.ok) throw unpackError(reply.header.error);
      this.#took(reply.header);
      const loaded = reply.header.coldStart;
      this.#crashLoop.up();
      this.setState('warm');
      if (first && loaded) {
        const source = artifacts.source ? { source: artifacts.source } : {};
        this.#coldStart = { ...loaded, fetch, runner: waited, ...runner.startPhases(), ...source };
        this.event(
          'cold-start',
          'warm',
          `fetch ${fetch.toFixed(3)} s, runner ${waited.toFixed(3)} s more, load ${loaded.load.toFixed(3)} s, warm-up ${loaded.warmup.toFixed(3)} s (in a runner, pid ${runner.pid})`,
        );
        this.emit('cold-start', this.#coldStart);
      }
    } catch (error) {
      if (runner && this.#runner === runner) this.#runner = undefined;
      runner?.kill('its version failed to load');
      taken.then(
        (r) => r !== runner && r.kill(),
        () => undefined,
      );
      if (first) {
        this.event('load-failed', 'failed', (error as Error).message);
        this.setState('failed');
      }
      throw error;
    } finally {
      // The next spare boots a while after this load, not beside it nor beside the first forwards
      // (measured: a spare booting then made the next cold start from the cache 10% slower).
      setTimeout(() => void this.#o.host.warm(), SPARE_AFTER_MS).unref();
    }
  }

  #message(runner: RunnerProcess, message: RunnerMessage): void {
    if (runner !== this.#runner) return;
    switch (message.t) {
      case 'snapshot':
        this.#took(message);
        return;
      case 'event': {
        const e = message.event;
        // The runner's own cold start is reported here with the node's fetch (#boot).
        if (e.type === 'cold-start') return;
        if (e.type !== 'state') this.event(e.type, this.state, e.detail);
        else if (e.detail) this.event('state', this.state, e.detail);
        return;
      }
      case 'hung':
        runner.kill(
          `a forward of ${message.rows} row(s) ran past its ${message.limitMs} ms limit (limits.forwardTimeoutMs)`,
        );
    }
  }

  /** The runner ended: while serving, that is a crash — fail what it held and restart it. */
  #exited(runner: RunnerProcess, exit: RunnerExit): void {
    if (runner !== this.#runner) return;
    this.#runner = undefined;
    if (this.#snapshot) this.#retired = addCounters(this.#retired, this.#snapshot.stats);
    this.#snapshot = undefined;
    this.#fresh = false;
    const why = describeExit(exit);
    const lines = exit.lastLines.slice(-5).join('\n');
    this.#lastExit = why;
    // Dying while it loads is a failed load (#boot says so); stopped or draining, it was asked to go.
    if (this.state !== 'warm') return;
    this.#crashLoop.crashed();
    const delay = this.#scheduleRestart(`runner ended: ${why}${lines ? `; last lines:\n${lines}` : ''}`);
    this.setState('restarting');
    this.emit('crash', { exit, restarts: this.#crashLoop.restarts, delayMs: delay } satisfies RunnerCrash);
  }

  /** Counts a crash and restarts after its backoff; the delay. */
  #scheduleRestart(why: string): number {
    const delay = this.#crashLoop.next();
    this.event('state', 'restarting', `${why}; restart ${this.#crashLoop.restarts} in ${delay / 1000} s`);
    this.#restartTimer = setTimeout(() => this.#restart(), delay);
    this.#restartTimer.unref();
    return delay;
  }

  #restart(): void {
    if (this.state !== 'restarting') return;
    this.#boot(false).catch((error: unknown) => {
      // It could not load again: another crash, a longer backoff.
      if (this.state !== 'restarting') return;
      this.#lastExit = (error as Error).message;
      this.#scheduleRestart(`restart failed: ${this.#lastExit}`);
    });
  }

  /** Adds an instance over the same weights, in the runner. */
  addInstance(): void {
    if (this.state !== 'warm')
      throw new UnavailableError(
        `function ${this.spec.name} v${this.version} is ${this.state}; instances are added to a warm pool`,
      );
    this.#fresh = false;
    this.#runner?.tell({ t: 'add' });
  }

  removeInstance(): boolean {
    const s = this.#snapshot?.stats;
    if (!s || this.spec.sequence || s.instances.total <= 1 || s.instances.idle === 0) return false;
    this.#fresh = false;
    this.#runner?.tell({ t: 'remove' });
    // Counted as gone now, so one autoscaler tick does not ask twice for the same instance.
    s.instances.total--;
    s.instances.idle--;
    return true;
  }

  room(): number {
    return this.#snapshot?.room ?? 0;
  }

  invoke(request: RawRequest, options: CallOptions = {}): Promise<InvokeResponse> {
    return this.#call(options, (runner) =>
      this.#calls.call(
        runner,
        (fields) => ({ t: 'invoke', contentType: request.contentType, ...fields }),
        [request.body],
        options,
        (reply, blobs) => {
          if (blobs.length !== 1) throw new InferenceError('the runner answered a call without its body');
          if (blobs[0]!.byteLength > this.#calls.maxReplyBytes)
            throw new InferenceError(
              `the runner answered ${blobs[0]!.byteLength} bytes, over its limit of ${this.#calls.maxReplyBytes} (limits.maxResponseMb)`,
            );
          return { body: blobs[0]!, contentType: reply.contentType };
        },
      ),
    );
  }

  /** Raw tensors: gathered with the others of this turn into one call (../wire/gather.ts), or alone. */
  infer(tensors: TensorsByName, options: CallOptions = {}): Promise<TensorsByName> {
    return this.#call(options, (runner) => {
      const target = this.#calls.target(runner);
      if (this.#calls.inflight.size > 0 || !this.#gather.empty) {
        const gathered = this.#gather.take(tensors, options, target);
        if (gathered) return gathered;
      }
      const blobs: Uint8Array[] = [];
      return target.send(packTensors(tensors, blobs), blobs, options);
    });
  }

  /** A request's bookkeeping around `send` to the runner (once the version is warm). */
  async #call<T>(options: CallOptions, send: (runner: RunnerProcess) => Promise<T>): Promise<T> {
    const t0 = performance.now();
    this.#lastRequestAt = t0;
    this.#pending++;
    this.#fresh = false;
    try {
      if (this.state === 'cold' || this.state === 'loading') await this.#waitForStart(t0, options);
      const runner = this.#runner;
      if (this.state !== 'warm' || !runner) throw this.#calls.nodeFailure(this.#notServing());
      return await send(runner);
    } catch (error) {
      const e = toHearthError(error);
      if (this.#calls.madeByNode(e)) {
        const us = (performance.now() - t0) * US;
        countFailure(this.#retired, e.code, us);
        observe(this.#retired.durations.request, us);
      }
      throw e;
    } finally {
      this.#pending--;
      this.#lastRequestAt = performance.now();
      this.#fresh = false;
      if (this.#pending === 0) this.emit('idle');
    }
  }

  /** A request that finds the version loading waits for it, up to its deadline. */
  async #waitForStart(t0: number, options: CallOptions): Promise<void> {
    if (this.#coldWaitFrom === undefined && !this.#coldStart) this.#coldWaitFrom = t0;
    await this.untilStarted(this.#starting ?? this.start(), options.deadline).catch((error: unknown) => {
      throw this.#calls.nodeFailure(toHearthError(error));
    });
    if (this.#coldWaitFrom !== undefined && this.#coldStart) {
      const queue = (performance.now() - this.#coldWaitFrom) / 1000;
      this.#coldWaitFrom = undefined;
      this.#coldStart.queue = queue;
      this.event('cold-start', this.state, `the first request waited ${queue.toFixed(3)} s for the version to load`);
      this.emit('cold-start-queue', queue);
    }
  }

  #notServing(): HearthError {
    if (this.state === 'restarting')
      return new UnavailableError(
        `function ${this.spec.name} v${this.version} is restarting: its runner ended (${this.#lastExit ?? 'unknown'})`,
      );
    return new UnavailableError(`function ${this.spec.name} v${this.version} is ${this.state} and takes no requests`);
  }

  /** Asks the runner for its counters now (statistics read right after a request see it). */
  async refresh(): Promise<void> {
    const runner = this.#runner;
    if (!runner || this.state !== 'warm' || this.#fresh) return;
    const reply = await runner.request({ t: 'stats' });
    if (reply.header.ok && runner === this.#runner) this.#took(reply.header);
  }

  /** A snapshot from the runner; with no call outstanding it holds all that was asked of it. */
  #took({ stats, room, device }: Snapshot): void {
    this.#snapshot = { stats, room, device };
    this.#fresh = this.#pending === 0 && this.#calls.inflight.size === 0;
  }

  stats(): PoolStats {
    const s = this.#snapshot?.stats;
    // Requests the node failed itself are in #retired, not in the runner's counters.
    const counters = s ? addCounters(structuredClone(this.#retired), s) : structuredClone(this.#retired);
    return {
      ...counters,
      state: this.state,
      instances: s?.instances ?? { total: 0, idle: 0, busy: 0, loading: 0 },
      queueDepth: s?.queueDepth ?? 0,
      pending: this.#pending,
      hookThreads: s?.hookThreads ?? 0,
      ...(this.#coldStart ? { coldStart: this.#coldStart } : {}),
      ...(s?.latency ? { latency: s.latency } : {}),
    };
  }

  async drain(): Promise<void> {
    if (this.state === 'stopped') return;
    this.setState('draining');
    clearTimeout(this.#restartTimer);
    await new Promise<void>((resolve) => (this.#pending === 0 ? resolve() : this.once('idle', resolve)));
    await this.stop();
  }

  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    this.setState('stopped');
    clearTimeout(this.#restartTimer);
    const runner = this.#runner;
    if (runner) {
      const reply = await Promise.race([
        runner.request({ t: 'stop' }),
        new Promise<undefined>((r) => setTimeout(() => r(undefined), 5000).unref()),
      ]);
      if (reply?.header.ok && reply.header.stats && this.#snapshot)
        this.#snapshot = { ...this.#snapshot, stats: reply.header.stats };
      this.#runner = undefined;
      runner.onMessage = () => undefined;
      // Stopped cleanly, it waits to serve this version again (a scale-from-zero or a load soon
      // after), its process and heap already made; anything else ends it.
      if (reply?.header.ok) this.#o.host.park(runner, this.#key);
      else await runner.close(1000);
    }
  }

  get #key(): string {
    return versionKey(this.spec.name, this.version);
  }
}
