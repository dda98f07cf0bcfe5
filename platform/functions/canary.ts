/**
 * Canaries with automatic rollback (`hearth deploy --canary 10 --canary-window 60s`): a new version
 * takes a share of the traffic while the node compares its calls with the serving versions' —
 * error rate as it goes, latency at the end of the window at a percentile both sides' calls can
 * estimate (canary-judge.ts) — and then, on its own, rolls the traffic back to the split before
 * (past a limit, or with too few calls to judge) or promotes the new version. Argo Rollouts' and
 * Flagger's canary analysis, per function, with the numbers the pools count.
 *
 * The canary's state lives in the function's record (registry), so the CLI, the console and every
 * node read one answer. One node watches it: the one that took the deploy, resumed when an embedded
 * node restarts; in a cluster the watcher holds a lease it renews each look, and should it die
 * another node takes the lease and the watch (counting every node's calls, from their heartbeats;
 * latency is timed on the watching node). A traffic change made by hand while it watches
 * (`hearth traffic`, `hearth rollback`, another deploy) ends it as `cancelled`, leaving that split alone.
 */
import type { Canary, CanaryRequest } from '../../sdk/api/index.js';
import { splitShares } from '../../sdk/api/index.js';
import type { FunctionRecord } from '../registry/index.js';
import { CANARY_DEFAULTS, decisionText, judge, percentilesOf, seconds } from './canary-judge.js';

export type { Verdict } from './canary-judge.js';
export { CALLS_ABOVE, CANARY_DEFAULTS, judge, LATENCY_FLOOR_MS, latencyRule, samplesFor } from './canary-judge.js';

const TICK_MS = 1000;

/** Answered and failed calls of one version in one place (this node, or another node's pool). */
export interface Counted {
  success: number;
  failure: number;
}

/** A version's latest answered calls over a window, and whether its ring had to drop some of them. */
export interface TimedCalls {
  /** Durations, µs, oldest first. */
  us: Float64Array;
  /** When each ended, ms. */
  at: Float64Array;
  /** More of the window's calls than the ring holds: these cover only its latest part. */
  dropped: boolean;
}

/** What the watch asks of the functions. */
export interface CanaryHost {
  record(name: string): Promise<FunctionRecord | undefined>;
  /** Writes the canary in the record (where one rolled back also marks its version `rolledBackBy`). */
  setCanary(name: string, canary: Canary): Promise<void>;
  /** Replaces the split; `previous` is what a later `hearth rollback` returns to. */
  setTraffic(name: string, split: Record<string, number>, previous?: Record<string, number>): Promise<void>;
  /** Brings every pool's counters up to now (once a tick, before `counts`). */
  refresh(): Promise<void>;
  /** A version's cumulative calls by where they ran ("local", a node id). */
  counts(name: string, version: number): Map<string, Counted>;
  /**
   * A version's answered calls on this node after its `since`-th (the latest 1024 at most): their
   * durations and ends; `counts(...).get('local').success` is how many it has answered so far.
   */
  latencies(name: string, version: number, since: number): TimedCalls;
  /** A line in the function's own log (and the node's). */
  note(name: string, version: number, level: 'info' | 'warn', msg: string): void;
  /** Cluster mode: takes or renews the lease of watching the function's canary (false: another node has it). */
  hold?(name: string): Promise<boolean>;
  release?(name: string): Promise<void>;
}

/** The split while a canary is watched: the serving versions keep their proportions in 100 − percent. */
export function canarySplit(serving: Record<string, number>, version: number, percent: number): Record<string, number> {
  const total = Object.values(serving).reduce((n, w) => n + w, 0);
  const split: Record<string, number> = {};
  for (const [v, w] of Object.entries(serving)) split[v] = Math.round(((w * (100 - percent)) / total) * 1e6) / 1e6;
  split[version] = percent;
  return split;
}

/** The canary a deploy starts, before it is written. */
export function newCanary(
  version: number,
  serving: Record<string, number>,
  request: CanaryRequest,
  now = Date.now(),
): Canary {
  return {
    version,
    percent: request.percent,
    windowMs: request.windowMs,
    maxErrorRate: request.maxErrorRate ?? CANARY_DEFAULTS.maxErrorRate,
    maxP99Ratio: request.maxP99Ratio ?? CANARY_DEFAULTS.maxP99Ratio,
    minCalls: request.minCalls ?? CANARY_DEFAULTS.minCalls,
    baseline: serving,
    split: canarySplit(serving, version, request.percent),
    startedAt: new Date(now).toISOString(),
    state: 'watching',
  };
}

const sameSplit = (a: Record<string, number>, b: Record<string, number>) => {
  const ka = Object.keys(a).filter((k) => a[k]! > 0);
  const kb = Object.keys(b).filter((k) => b[k]! > 0);
  return ka.length === kb.length && ka.every((k) => Math.abs(a[k]! - (b[k] ?? 0)) < 1e-6);
};

interface Watched {
  canary: Canary;
  deadline: number;
  /** The last cumulative count of each (version, place), and what the two sides added since the start. */
  last: Map<string, Counted>;
  /** Each version's answered calls on this node when the watch began: its latencies are those after. */
  from: Map<number, number>;
  seen: { canary: { calls: number; failed: number }; baseline: { calls: number; failed: number } };
}

export class CanaryWatch {
  readonly #host: CanaryHost;
  readonly #tickMs: number;
  readonly #watched = new Map<string, Watched>();
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;

  constructor(host: CanaryHost, tickMs = TICK_MS) {
    this.#host = host;
    this.#tickMs = tickMs;
  }

  /** Starts watching a canary already written (its split set); counts begin now. */
  async watch(
    name: string,
    canary: Canary,
    deadline = Date.parse(canary.startedAt) + canary.windowMs,
  ): Promise<boolean> {
    if (this.#host.hold && !(await this.#host.hold(name))) return false;
    await this.#host.refresh();
    const w: Watched = {
      canary,
      deadline,
      last: new Map(),
      from: new Map(),
      seen: { canary: { calls: 0, failed: 0 }, baseline: { calls: 0, failed: 0 } },
    };
    this.#count(name, w);
    for (const v of [canary.version, ...Object.keys(canary.baseline).map(Number)])
      w.from.set(v, this.#host.counts(name, v).get('local')?.success ?? 0);
    w.seen = { canary: { calls: 0, failed: 0 }, baseline: { calls: 0, failed: 0 } };
    this.#watched.set(name, w);
    this.#timer ??= setInterval(() => void this.tick(), this.#tickMs).unref();
    return true;
  }

  /**
   * Canaries that watch with no watcher — this node restarted, or (cluster) the node that watched
   * one died and its lease expired — are watched again here, for a whole window.
   */
  async resume(records: FunctionRecord[]): Promise<void> {
    for (const r of records) {
      const c = r.canary;
      if (c?.state !== 'watching' || this.#watched.has(r.name)) continue;
      if (!(await this.watch(r.name, c, Date.now() + c.windowMs))) continue;
      this.#host.note(
        r.name,
        c.version,
        'info',
        `canary: ${this.#host.hold ? 'its watcher stopped; this node watches' : 'the node restarted; watching'} v${c.version} again for ${seconds(c.windowMs)}`,
      );
    }
  }

  /** What a watched canary has seen so far (the API shows it while it watches). */
  observed(name: string): Canary['observed'] | undefined {
    const w = this.#watched.get(name);
    return w ? this.#observed(name, w) : undefined;
  }

  /** One look at every canary (once a tick; a test calls it directly). */
  tick(): Promise<void> {
    this.#ticking ??= this.#tick().finally(() => {
      this.#ticking = undefined;
    });
    return this.#ticking;
  }

  /** Stops watching; in a cluster, the leases go back so another node takes the watches at once. */
  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    for (const name of this.#watched.keys()) void this.#host.release?.(name).catch(() => undefined);
    this.#watched.clear();
  }

  async #tick(): Promise<void> {
    if (this.#watched.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
      return;
    }
    await this.#host.refresh();
    for (const [name, w] of [...this.#watched]) {
      try {
        // Another node took the watch (this one lost its lease, paused past it): it is theirs now.
        if (this.#host.hold && !(await this.#host.hold(name))) this.#watched.delete(name);
        else await this.#look(name, w);
      } catch (error) {
        this.#watched.delete(name);
        await this.#decide(name, w, 'cancelled', `the watch failed: ${(error as Error).message}`).catch(() => {});
      }
      if (!this.#watched.has(name)) await this.#host.release?.(name).catch(() => undefined);
    }
  }

  async #look(name: string, w: Watched): Promise<void> {
    const record = await this.#host.record(name);
    const c = record?.canary;
    if (!record || c?.state !== 'watching' || c.startedAt !== w.canary.startedAt) {
      this.#watched.delete(name);
      return;
    }
    this.#count(name, w);
    if (!sameSplit(record.traffic, c.split)) {
      this.#watched.delete(name);
      await this.#decide(
        name,
        w,
        'cancelled',
        `the traffic was changed while it was watched (now ${splitShares(record.traffic)}): the canary stops and leaves that split`,
      );
      return;
    }
    const observed = this.#observed(name, w);
    const verdict = judge(c, observed.canary, observed.baseline, Date.now() >= w.deadline);
    if (verdict.verdict === 'watch') return;
    this.#watched.delete(name);
    // The record keeps what was judged: calls timed meanwhile (setTraffic awaits) are not in it.
    if (verdict.verdict === 'rollback') {
      // A later `hearth rollback` goes back to the canary's split, as after any change.
      await this.#host.setTraffic(name, c.baseline, c.split);
      await this.#decide(name, w, 'rolled-back', verdict.reason, {
        cause: verdict.cause,
        percentile: verdict.percentile,
        observed,
      });
    } else {
      // After a promotion, `hearth rollback` returns to the versions that served before the canary.
      await this.#host.setTraffic(name, { [c.version]: 100 }, c.baseline);
      await this.#decide(name, w, 'promoted', verdict.reason, { percentile: verdict.percentile, observed });
    }
  }

  async #decide(
    name: string,
    w: Watched,
    state: Canary['state'],
    reason: string,
    { observed = this.#observed(name, w), ...how }: Pick<Canary, 'cause' | 'percentile' | 'observed'> = {},
  ): Promise<void> {
    const c = w.canary;
    const defined = Object.fromEntries(Object.entries(how).filter(([, v]) => v !== undefined));
    await this.#host.setCanary(name, {
      ...c,
      state,
      reason,
      ...defined,
      decidedAt: new Date().toISOString(),
      observed,
    });
    this.#host.note(name, c.version, state === 'promoted' ? 'info' : 'warn', decisionText(c, state, reason));
  }

  /** Adds what each (version, place) counted since the last look: a pool that restarted counts again from 0. */
  #count(name: string, w: Watched): void {
    const side = (version: number, into: { calls: number; failed: number }) => {
      for (const [place, now] of this.#host.counts(name, version)) {
        const key = `${version}\u0000${place}`;
        const before = w.last.get(key) ?? { success: 0, failure: 0 };
        const restarted = now.success < before.success || now.failure < before.failure;
        const success = restarted ? now.success : now.success - before.success;
        const failure = restarted ? now.failure : now.failure - before.failure;
        into.calls += success + failure;
        into.failed += failure;
        w.last.set(key, now);
      }
    };
    side(w.canary.version, w.seen.canary);
    for (const v of Object.keys(w.canary.baseline)) side(Number(v), w.seen.baseline);
  }

  /**
   * Both sides' counts, and their latency over the calls timed here since the watch began (the
   * baseline's pooled), over the same span of time: where a version's ring dropped some of the
   * window's calls (the baseline's 1024 latest, at nine times the canary's rate), the other sides'
   * calls from before its oldest are left out too, so load that drifts over the window weighs on
   * both sides alike.
   */
  #observed(name: string, w: Watched): NonNullable<Canary['observed']> {
    const c = w.canary;
    const baseline = Object.keys(c.baseline).map(Number);
    const timed = new Map([c.version, ...baseline].map((v) => [v, this.#host.latencies(name, v, w.from.get(v) ?? 0)]));
    let from = Number.NEGATIVE_INFINITY;
    for (const t of timed.values()) if (t.dropped && t.at.length > 0) from = Math.max(from, t.at[0]!);
    const side = (versions: number[]) => {
      const kept: number[] = [];
      for (const v of versions) {
        const t = timed.get(v)!;
        for (let i = 0; i < t.us.length; i++) if (t.at[i]! >= from) kept.push(t.us[i]!);
      }
      return percentilesOf(Float64Array.from(kept));
    };
    return {
      canary: { ...w.seen.canary, ...side([c.version]) },
      baseline: { ...w.seen.baseline, ...side(baseline) },
    };
  }
}
