/**
 * Canaries with automatic rollback (`hearth deploy --canary 10 --canary-window 60s`): a new version
 * takes a share of the traffic while the node compares its calls with the serving versions' —
 * error rate as it goes, p99 at the end of the window — and then, on its own, rolls the traffic back
 * to the split before (past a limit, or with too few calls to judge) or promotes the new version.
 * Argo Rollouts' and Flagger's canary analysis, per function, with the numbers the pools count.
 *
 * The canary's state lives in the function's record (registry), so the CLI, the console and every
 * node read one answer. One node watches it: the one that took the deploy, resumed when an embedded
 * node restarts; in a cluster the watcher holds a lease it renews each look, and should it die
 * another node takes the lease and the watch (counting every node's calls, from their heartbeats). A traffic change made by hand while it watches (`hearth traffic`,
 * `hearth rollback`, another deploy) ends it as `cancelled`, leaving that split alone.
 */
import type { Canary, CanaryObserved, CanaryRequest } from '../../sdk/api/index.js';
import type { FunctionRecord } from '../registry/index.js';

export const CANARY_DEFAULTS = { maxErrorRate: 5, maxP99Ratio: 1.5, minCalls: 10 } as const;
/** A p99 this close to the serving versions' is never a regression (timer noise on sub-ms models). */
export const P99_FLOOR_MS = 2;
const TICK_MS = 1000;

/** Answered and failed calls of one version in one place (this node, or another node's pool). */
export interface Counted {
  success: number;
  failure: number;
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
  /** A version's p99 over its latest calls on this node, when it has at least `of` of them. */
  p99(name: string, version: number, of: number): number | undefined;
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

export type Verdict = { verdict: 'watch' } | { verdict: 'promote' | 'rollback'; reason: string };

const rate = (o: CanaryObserved) => (o.calls > 0 ? o.failed / o.calls : 0);
const pct = (r: number) => `${(r * 100).toFixed(1)}%`;
const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;
const versions = (split: Record<string, number>) =>
  Object.keys(split)
    .map((v) => `v${v}`)
    .join('+');

/**
 * The decision, from what each side saw since the canary started: roll back as soon as the
 * canary's error rate is more than `maxErrorRate` points over the serving versions' (once it has
 * `minCalls` calls); at the end of the window roll back with fewer calls than that, or with a p99
 * over `maxP99Ratio` × theirs (and P99_FLOOR_MS over it); else promote.
 */
export function judge(c: Canary, canary: CanaryObserved, baseline: CanaryObserved, ended: boolean): Verdict {
  const base = versions(c.baseline);
  const over = (rate(canary) - rate(baseline)) * 100;
  if (canary.calls >= c.minCalls && canary.failed > 0 && over > c.maxErrorRate)
    return {
      verdict: 'rollback',
      reason: `v${c.version} failed ${canary.failed} of ${canary.calls} calls (${pct(rate(canary))}) against ${pct(rate(baseline))} on ${base}: more than ${c.maxErrorRate} points over`,
    };
  if (!ended) return { verdict: 'watch' };
  if (canary.calls < c.minCalls)
    return {
      verdict: 'rollback',
      reason: `only ${canary.calls} call${canary.calls === 1 ? '' : 's'} reached v${c.version} in ${seconds(c.windowMs)}, fewer than the ${c.minCalls} it needs to be judged`,
    };
  const errors = `errors ${pct(rate(canary))} over ${canary.calls} calls against ${pct(rate(baseline))} on ${base}`;
  if (canary.p99Ms === null || baseline.p99Ms === null)
    return {
      verdict: 'promote',
      reason: `${errors}; p99 not compared (no ${canary.p99Ms === null ? `v${c.version}` : base} calls sampled on this node)`,
    };
  const latency = `p99 ${canary.p99Ms} ms against ${baseline.p99Ms} ms`;
  if (canary.p99Ms > baseline.p99Ms * c.maxP99Ratio && canary.p99Ms - baseline.p99Ms >= P99_FLOOR_MS)
    return {
      verdict: 'rollback',
      reason: `v${c.version}'s ${latency} on ${base}: over ${c.maxP99Ratio}× (${errors})`,
    };
  return { verdict: 'promote', reason: `${errors}; ${latency}` };
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
      seen: { canary: { calls: 0, failed: 0 }, baseline: { calls: 0, failed: 0 } },
    };
    this.#count(name, w);
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
        `the traffic was changed while it was watched (now ${JSON.stringify(record.traffic)}): the canary stops and leaves that split`,
      );
      return;
    }
    const observed = this.#observed(name, w);
    const verdict = judge(c, observed.canary, observed.baseline, Date.now() >= w.deadline);
    if (verdict.verdict === 'watch') return;
    this.#watched.delete(name);
    if (verdict.verdict === 'rollback') {
      // A later `hearth rollback` goes back to the canary's split, as after any change.
      await this.#host.setTraffic(name, c.baseline, c.split);
      await this.#decide(name, w, 'rolled-back', verdict.reason);
    } else {
      // After a promotion, `hearth rollback` returns to the versions that served before the canary.
      await this.#host.setTraffic(name, { [c.version]: 100 }, c.baseline);
      await this.#decide(name, w, 'promoted', verdict.reason);
    }
  }

  async #decide(name: string, w: Watched, state: Canary['state'], reason: string): Promise<void> {
    const c = w.canary;
    await this.#host.setCanary(name, {
      ...c,
      state,
      reason,
      decidedAt: new Date().toISOString(),
      observed: this.#observed(name, w),
    });
    const what =
      state === 'rolled-back'
        ? `rolled back to ${JSON.stringify(c.baseline)}`
        : state === 'promoted'
          ? `promoted v${c.version} to 100%`
          : 'cancelled';
    this.#host.note(name, c.version, state === 'promoted' ? 'info' : 'warn', `canary: ${what}: ${reason}`);
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

  #observed(name: string, w: Watched): NonNullable<Canary['observed']> {
    const c = w.canary;
    const of = c.minCalls;
    const baseP99 = Object.keys(c.baseline)
      .map((v) => this.#host.p99(name, Number(v), of))
      .filter((p): p is number => p !== undefined);
    return {
      canary: { ...w.seen.canary, p99Ms: this.#host.p99(name, c.version, of) ?? null },
      baseline: { ...w.seen.baseline, p99Ms: baseP99.length > 0 ? Math.max(...baseP99) : null },
    };
  }
}
