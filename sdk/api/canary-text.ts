/** A canary in one line, as `hearth describe` and the console show it. */
import type { Canary, CanaryObserved } from './schemas.js';

/** One side's calls: `12 calls, 0 failed, p99 3.1 ms`. */
export const canarySide = (o: CanaryObserved) =>
  `${o.calls} calls, ${o.failed} failed${o.p99Ms === null ? '' : `, p99 ${o.p99Ms} ms`}`;

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
