/** A canary in one line, as `hearth describe`, `hearth deploy` and the console show it. */
// Types only: the console imports this file, and zod stays out of its bundle.
import { CANARY_PERCENTILES } from './canary-percentiles.js';
import type { Canary, CanaryObserved } from './canary-schemas.js';

/** The highest latency percentile a side's sample estimates, as `p90 3.1 ms` (undefined: none yet). */
export function sideLatency(o: CanaryObserved): string | undefined {
  for (const p of CANARY_PERCENTILES) {
    const ms = o[`${p}Ms`];
    if (typeof ms === 'number') return `${p} ${ms} ms`;
  }
  return undefined;
}

/** One side's calls: `12 calls, 0 failed, p50 3.1 ms`. */
export const canarySide = (o: CanaryObserved) => {
  const latency = sideLatency(o);
  return `${o.calls} calls, ${o.failed} failed${latency ? `, ${latency}` : ''}`;
};

/** A traffic split as shares: `v1 100%`, `v1 90%, v2 10%` (weights need not add up to 100). */
export function splitShares(split: Record<string, number>): string {
  const total = Object.values(split).reduce((n, w) => n + w, 0);
  const shares = Object.entries(split)
    .filter(([, w]) => w > 0)
    .map(([v, w]) => `v${v} ${Math.round((w / total) * 1000) / 10}%`);
  return shares.join(', ') || 'no version';
}

/** What the canary watches and has seen, or what it decided and why. */
export function canaryText(c: Canary): string {
  const seen = c.observed
    ? ` — v${c.version}: ${canarySide(c.observed.canary)}; serving: ${canarySide(c.observed.baseline)}`
    : '';
  if (c.state === 'watching')
    return `canary: v${c.version} at ${c.percent}% for ${c.windowMs / 1000} s from ${c.startedAt}, watching${seen}`;
  const after = c.decidedAt ? ` after ${Math.round((Date.parse(c.decidedAt) - Date.parse(c.startedAt)) / 1000)} s` : '';
  return `canary: v${c.version} ${c.state}${after}: ${c.reason ?? 'no reason recorded'}`;
}
