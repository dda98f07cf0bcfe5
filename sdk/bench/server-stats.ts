/**
 * The server's own account of a step: Triton's statistics (`GET /v2/models/NAME[/versions/V]/stats`)
 * read before and after, their difference per request — queue, compute input/infer/output — and,
 * for a function URL, the hook's pre and post from the node's pool counters (`/api/v1/pools`).
 */
import { pools } from '../client/node-views.js';
import type { Transport } from '../client/transport.js';
import type { ServerSplit } from './types.js';

interface Duration {
  count: number;
  ns: number;
}

const FIELDS = ['success', 'fail', 'queue', 'compute_input', 'compute_infer', 'compute_output'] as const;
type Field = (typeof FIELDS)[number];

export interface StatsSnapshot {
  stats: Record<Field, Duration>;
  /** The hook's pre and post: count and total µs (undefined when the pools cannot be read). */
  hooks?: { pre: { count: number; totalUs: number }; post: { count: number; totalUs: number } };
}

/** A model's KServe route: `/v2/models/NAME[/versions/V]`. */
export const modelPath = (name: string, version?: number): string =>
  `/v2/models/${encodeURIComponent(name)}${version === undefined ? '' : `/versions/${version}`}`;

/** The statistics now, summed over the versions they cover; `hooks` adds the pools' pre and post. */
export async function snapshot(
  node: Transport,
  name: string,
  version: number | undefined,
  hooks: boolean,
): Promise<StatsSnapshot> {
  const body = (await (await node.request(`${modelPath(name, version)}/stats`)).json()) as {
    model_stats?: { inference_stats?: Partial<Record<Field, Partial<Duration>>> }[];
  };
  const stats = Object.fromEntries(FIELDS.map((f) => [f, { count: 0, ns: 0 }])) as Record<Field, Duration>;
  for (const model of body.model_stats ?? [])
    for (const f of FIELDS) {
      stats[f].count += Number(model.inference_stats?.[f]?.count ?? 0);
      stats[f].ns += Number(model.inference_stats?.[f]?.ns ?? 0);
    }
  if (!hooks) return { stats };
  // The pools may be an admin's to list, or gone (scaled to zero): the split goes without them.
  const live = await pools(node).catch(() => undefined);
  if (!live) return { stats };
  const sum = { pre: { count: 0, totalUs: 0 }, post: { count: 0, totalUs: 0 } };
  for (const p of live) {
    if (p.function !== name || (version !== undefined && p.version !== version)) continue;
    for (const k of ['pre', 'post'] as const) {
      sum[k].count += p.durations?.[k]?.count ?? 0;
      sum[k].totalUs += p.durations?.[k]?.totalUs ?? 0;
    }
  }
  return { stats, hooks: sum };
}

const perRequest = (ns: number, count: number): number | undefined =>
  count > 0 && ns >= 0 ? Math.round(ns / count / 100) / 10 : undefined;

/** The difference of two snapshots as µs per request (undefined where a counter went backwards). */
export function split(before: StatsSnapshot, after: StatsSnapshot): ServerSplit {
  const d = (f: Field) => ({
    count: after.stats[f].count - before.stats[f].count,
    ns: after.stats[f].ns - before.stats[f].ns,
  });
  const success = d('success');
  const queue = d('queue');
  const out: ServerSplit = {
    success: success.count,
    failure: d('fail').count,
    requestUs: perRequest(success.ns, success.count),
    queueUs: perRequest(queue.ns, queue.count),
    computeInputUs: perRequest(d('compute_input').ns, d('compute_input').count),
    computeInferUs: perRequest(d('compute_infer').ns, d('compute_infer').count),
    computeOutputUs: perRequest(d('compute_output').ns, d('compute_output').count),
  };
  if (before.hooks && after.hooks)
    for (const k of ['pre', 'post'] as const) {
      const count = after.hooks[k].count - before.hooks[k].count;
      const us = after.hooks[k].totalUs - before.hooks[k].totalUs;
      out[`${k}Us`] = perRequest(us * 1000, count);
    }
  return out;
}

/**
 * The snapshot after a step, once the server has counted what the client saw answered: a node
 * counts a request as it answers it, and a runner's counters reach the node a moment later.
 * Waits up to `waitMs` for `answered` more successes than `before`.
 */
export async function settledSnapshot(
  take: () => Promise<StatsSnapshot>,
  before: StatsSnapshot,
  answered: number,
  waitMs = 2000,
): Promise<StatsSnapshot> {
  const until = Date.now() + waitMs;
  for (;;) {
    const after = await take();
    if (after.stats.success.count - before.stats.success.count >= answered || Date.now() >= until) return after;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
