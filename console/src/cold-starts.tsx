/** A function's cold starts as a waterfall per pool: queue, fetch, load and warm-up. */
import type { FunctionInfo } from './api.js';

export function ColdStarts({ info }: { info: FunctionInfo }) {
  const starts = info.pools.filter((p) => p.coldStart);
  if (starts.length === 0) return null;
  const total = (c: NonNullable<(typeof starts)[number]['coldStart']>) => (c.queue ?? 0) + c.fetch + c.load + c.warmup;
  const scale = Math.max(...starts.map((p) => total(p.coldStart!)));
  const phases = ['queue', 'fetch', 'load', 'warmup'] as const;
  return (
    <section aria-labelledby="cold-title">
      <h2 id="cold-title">Cold starts</h2>
      {starts.map((p) => {
        const c = p.coldStart!;
        return (
          <div
            key={`${p.version}${p.node ?? ''}`}
            class="waterfall"
            role="img"
            aria-label={`v${p.version}: ${phases.map((k) => `${k} ${((c[k] ?? 0) * 1000).toFixed(0)} ms`).join(', ')}`}
          >
            <span class="wf-label">v{p.version}</span>
            <span class="wf-bars">
              {phases.map((k) => (
                <span
                  key={k}
                  class={`wf wf-${k}`}
                  style={{ width: `${(((c[k] ?? 0) / scale) * 100).toFixed(2)}%` }}
                  title={`${k} ${((c[k] ?? 0) * 1000).toFixed(0)} ms`}
                />
              ))}
            </span>
            <span class="muted">{(total(c) * 1000).toFixed(0)} ms</span>
          </div>
        );
      })}
      <p class="muted legend">
        <span class="wf wf-queue" /> queue <span class="wf wf-fetch" /> fetch <span class="wf wf-load" /> load{' '}
        <span class="wf wf-warmup" /> warm-up
      </p>
    </section>
  );
}
