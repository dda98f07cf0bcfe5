/** A function's log followed live (server-sent events), and its recent errors above it. */
import { useEffect, useState } from 'preact/hooks';

import type { FunctionLogEntry } from './api.js';
import { followLogs } from './api.js';
import { Alert } from './ui.js';

export function Logs({ name }: { name: string }) {
  const [entries, setEntries] = useState<FunctionLogEntry[]>([]);
  const [error, setError] = useState<string | undefined>();
  useEffect(() => {
    const stop = new AbortController();
    setEntries([]);
    followLogs(name, (e) => setEntries((all) => [...all.slice(-499), e]), stop.signal).catch((e: Error) => {
      if (!stop.signal.aborted) setError(e.message);
    });
    return () => stop.abort();
  }, [name]);
  const errors = entries.filter((e) => e.level === 'error');
  return (
    <>
      <section aria-labelledby="errors-title">
        <h2 id="errors-title">Recent errors</h2>
        {errors.length === 0 ? (
          <p class="muted">None.</p>
        ) : (
          <ul>
            {errors.slice(-10).map((e) => (
              <RecentError key={`${e.at}${e.msg}`} entry={e} />
            ))}
          </ul>
        )}
      </section>
      <section aria-labelledby="log-title">
        <h2 id="log-title">Log</h2>
        <Alert error={error} />
        {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must take the keyboard's focus (WCAG 2.1.1) */}
        <pre class="log" aria-live="polite" tabIndex={0} data-testid="log">
          {entries
            .map(
              (e) =>
                `${new Date(e.at).toISOString().slice(11, 23)} ${e.version === undefined ? '  ' : `v${e.version}`} ${e.source} ${e.level} ${e.msg}${e.requestId ? ` [${e.requestId}]` : ''}`,
            )
            .join('\n')}
        </pre>
      </section>
    </>
  );
}

/**
 * One error: when, which version, from where and for which request; its message's first line, and a
 * traceback (TorchScript's, a hook's stack) below it with its lines kept, folded until opened.
 */
function RecentError({ entry: e }: { entry: FunctionLogEntry }) {
  const [first, ...rest] = e.msg.split('\n');
  const trace = rest.join('\n').trimEnd();
  return (
    <li class="recent-error">
      <span class="muted">{new Date(e.at).toLocaleTimeString()}</span>{' '}
      {e.version !== undefined && <strong>v{e.version}</strong>} <span class="muted">{e.source}</span> {first}{' '}
      {e.requestId && <code>{e.requestId}</code>}
      {trace && (
        <details>
          <summary>
            Traceback ({rest.length} line{rest.length === 1 ? '' : 's'})
          </summary>
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must take the keyboard's focus (WCAG 2.1.1) */}
          <pre class="traceback" tabIndex={0}>
            {trace}
          </pre>
        </details>
      )}
    </li>
  );
}
