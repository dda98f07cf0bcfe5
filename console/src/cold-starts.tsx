/**
 * A function's cold starts as a waterfall per pool: fetch, the wait for a runner process past it,
 * load and warm-up, one after another; and the first request's whole wait (queue) beside them.
 */
import type { FunctionInfo } from './api.js';

type ColdStart = NonNullable<FunctionInfo['pools'][number]['coldStart']>;
const PHASES = ['fetch', 'runner', 'load', 'warmup'] as const;
const ms = (seconds: number | undefined) => `${((seconds ?? 0) * 1000).toFixed(0)} ms`;

/** How the runner it waited for started (forked from the template or exec'd, and its phases). */
function runnerStart(c: ColdStart): string {
  if (c.runnerFrom === undefined) return '';
  const phases = c.runnerJail === undefined ? '' : `: jail ${ms(c.runnerJail)}, runtime ${ms(c.runnerRuntime)}`;
  return ` (its runner ${c.runnerFrom === 'template' ? 'forked from the template' : "exec'd"}${phases})`;
}

export function ColdStarts({ info }: { info: FunctionInfo }) {
  const starts = info.pools.filter((p) => p.coldStart);
  if (starts.length === 0) return null;
  const phases = (c: ColdStart) => PHASES.reduce((sum, k) => sum + (c[k] ?? 0), 0);
  const total = (c: ColdStart) => Math.max(c.queue ?? 0, phases(c));
  const scale = Math.max(...starts.map((p) => total(p.coldStart!)));
  return (
    <section aria-labelledby="cold-title">
      <h2 id="cold-title">Cold starts</h2>
      {starts.map((p) => {
        const c = p.coldStart!;
        const label = `v${p.version}: ${PHASES.map((k) => `${k} ${ms(c[k])}`).join(', ')}${runnerStart(c)}`;
        return (
          <div key={`${p.version}${p.node ?? ''}`} class="waterfall" role="img" aria-label={label}>
            <span class="wf-label">v{p.version}</span>
            <span class="wf-bars">
              {PHASES.map((k) => (
                <span
                  key={k}
                  class={`wf wf-${k}`}
                  style={{ width: `${(((c[k] ?? 0) / scale) * 100).toFixed(2)}%` }}
                  title={`${k} ${ms(c[k])}${k === 'runner' ? runnerStart(c) : ''}`}
                />
              ))}
            </span>
            <span class="muted" title="the first request's whole wait">
              {c.queue === undefined ? ms(phases(c)) : `waited ${ms(c.queue)}`}
            </span>
          </div>
        );
      })}
      <p class="muted legend">
        <span class="wf wf-fetch" /> fetch <span class="wf wf-runner" /> runner <span class="wf wf-load" /> load{' '}
        <span class="wf wf-warmup" /> warm-up
      </p>
    </section>
  );
}
