/**
 * The autoscale loop: every tick, each warm pool's load goes to its ScaleDecider, and the decision
 * is carried out — instances added over the shared weights or idle ones removed, and an idle pool
 * past scaleDownAfterS stopped (drained), to cold-start on its next request.
 */
import type { PoolStats } from '../../runtime/index.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import { ScaleDecider } from './autoscaler.js';

/** A pool as the loop sees it: its load, and the means to change its size. */
export interface ScalablePool {
  readonly spec: FunctionSpec;
  readonly version: number;
  readonly state: string;
  readonly lastRequestAt: number;
  stats(): PoolStats;
  room(): number;
  addInstance(): void;
  removeInstance(): boolean;
}

/** The pools to scale, and how one of them is stopped (scaled to zero). */
export interface ScalablePools {
  values(): Iterable<ScalablePool>;
  stop(name: string, version: number, drain: boolean): Promise<void>;
}

export interface AutoscaleLoopOptions {
  /** How often every pool is looked at (default 1000 ms). */
  tickMs?: number;
  /** Work for a version waiting outside its pool (cluster-wide queues, the job queue). */
  queuedElsewhere?: (name: string, version: number) => number;
  log?: { info(o: object, msg?: string): void; warn(o: object, msg?: string): void };
  /** A version's scaling now, where it changed since its pool started (`hearth scale`). */
  scaling?: (name: string, version: number) => FunctionSpec['scaling'] | undefined;
}

export class AutoscaleLoop {
  readonly #pools: ScalablePools;
  readonly #o: AutoscaleLoopOptions;
  readonly #scalers = new WeakMap<ScalablePool, { policy: FunctionSpec['scaling']; decider: ScaleDecider }>();
  readonly #ticker: NodeJS.Timeout;

  constructor(pools: ScalablePools, options: AutoscaleLoopOptions = {}) {
    this.#pools = pools;
    this.#o = options;
    this.#ticker = setInterval(() => this.tick(), options.tickMs ?? 1000);
    this.#ticker.unref();
  }

  tick(): void {
    for (const pool of [...this.#pools.values()]) {
      if (pool.state !== 'warm') continue;
      const policy = this.#o.scaling?.(pool.spec.name, pool.version) ?? pool.spec.scaling;
      let entry = this.#scalers.get(pool);
      if (entry?.policy !== policy) {
        entry = { policy, decider: new ScaleDecider(policy) };
        this.#scalers.set(pool, entry);
      }
      const scaler = entry.decider;
      const stats = pool.stats();
      const instances = stats.instances.total;
      const load = stats.pending + (this.#o.queuedElsewhere?.(pool.spec.name, pool.version) ?? 0);
      const wantsMore = scaler.wanted(load) > instances;
      const decision = scaler.decide({
        now: performance.now(),
        load,
        instances,
        lastRequestAt: pool.lastRequestAt,
        room: wantsMore ? pool.room() : 0,
      });
      const where = { function: pool.spec.name, version: pool.version };
      if (decision.action === 'up') {
        for (let n = instances; n < decision.to; n++) pool.addInstance();
        this.#o.log?.info({ ...where, from: instances, to: decision.to, load }, 'scaled up');
      } else if (decision.action === 'down') {
        let n = instances;
        while (n > decision.to && pool.removeInstance()) n--;
        if (n < instances) this.#o.log?.info({ ...where, from: instances, to: n, load }, 'scaled down');
      } else if (decision.action === 'zero') {
        this.#o.log?.info({ ...where, idleS: policy.scaleDownAfterS }, 'scaled to zero');
        void this.#pools.stop(pool.spec.name, pool.version, true);
      } else if (decision.action === 'hold' && decision.reason === 'no-room') {
        this.#o.log?.warn({ ...where, instances, wanted: decision.wanted }, 'scale-up waits: no room on the device');
      }
    }
  }

  close(): void {
    clearInterval(this.#ticker);
  }
}
