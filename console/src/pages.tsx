/** The overview (every function live), jobs (one by id) and nodes (cluster mode). */
import { useEffect, useRef, useState } from 'preact/hooks';

import type { FunctionEntry, PoolInfo } from './api.js';
import { api } from './api.js';

/** Calls `load` now and every `ms`, keeping its latest value (and error). */
export function usePoll<T>(load: () => Promise<T>, ms = 1000, deps: unknown[] = []): { value?: T; error?: string } {
  const [state, setState] = useState<{ value?: T; error?: string }>({});
  useEffect(() => {
    let live = true;
    const tick = () =>
      load().then(
        (value) => live && setState({ value }),
        (e: Error) => live && setState((s) => ({ ...s, error: e.message })),
      );
    void tick();
    const timer = setInterval(tick, ms);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, deps);
  return state;
}

/** A function's state from its pools: warm, loading, crash-looping, failing or cold. */
export function stateOf(pools: PoolInfo[]): string {
  const states = new Set(pools.map((p) => p.state));
  if (states.has('restarting')) return 'crash-looping';
  if (states.has('failed')) return 'failing';
  if (states.has('warm')) return 'warm';
  if (states.has('loading')) return 'loading';
  return 'cold';
}

export const splitText = (traffic: Record<string, number>) =>
  Object.entries(traffic)
    .map(([v, w]) => `v${v}=${w}`)
    .join(' ') || '—';

const ms = (v: number | undefined) => (v === undefined ? '—' : v < 10 ? v.toFixed(1) : v.toFixed(0));

export function Overview() {
  const last = useRef(new Map<string, { at: number; done: number }>());
  const { value, error } = usePoll(async () => {
    const [{ functions }, { pools }] = await Promise.all([
      api<{ functions: FunctionEntry[] }>('/api/v1/functions'),
      api<{ pools: PoolInfo[] }>('/api/v1/pools'),
    ]);
    const now = performance.now();
    const rows = functions.map((f) => {
      const mine = pools.filter((p) => p.function === f.name);
      const done = mine.reduce((n, p) => n + p.success + p.failure, 0);
      const failed = mine.reduce((n, p) => n + p.failure, 0);
      const before = last.current.get(f.name);
      last.current.set(f.name, { at: now, done });
      const rate = before && now > before.at ? Math.max(0, (done - before.done) / ((now - before.at) / 1000)) : 0;
      const lat = mine.filter((p) => p.latency);
      return {
        ...f,
        pools: mine,
        state: stateOf(mine),
        rate,
        errorRate: done ? failed / done : 0,
        p50: lat.length ? Math.max(...lat.map((p) => p.latency!.p50Ms)) : undefined,
        p99: lat.length ? Math.max(...lat.map((p) => p.latency!.p99Ms)) : undefined,
        instances: mine.reduce(
          (a, p) => ({
            busy: a.busy + p.instances.busy,
            idle: a.idle + p.instances.idle,
            loading: a.loading + p.instances.loading,
          }),
          { busy: 0, idle: 0, loading: 0 },
        ),
        queue: mine.reduce((n, p) => n + p.queueDepth, 0),
        // Which node holds each pool, in cluster mode (a single node calls its own 'local').
        nodes: [...new Set(mine.map((p) => p.node).filter((n) => n && n !== 'local'))],
      };
    });
    return rows;
  });
  return (
    <section aria-labelledby="functions-title">
      <h1 id="functions-title">Functions</h1>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {!value ? (
        <p>Loading…</p>
      ) : value.length === 0 ? (
        <p>
          No functions yet: deploy one with <code>hearth deploy</code>.
        </p>
      ) : (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Every function, refreshed each second</caption>
            <thead>
              <tr>
                <th scope="col">Function</th>
                <th scope="col">State</th>
                <th scope="col">Versions</th>
                <th scope="col">Traffic</th>
                <th scope="col">req/s</th>
                <th scope="col">p50 / p99 ms</th>
                <th scope="col">Errors</th>
                <th scope="col">Instances (busy/idle/loading)</th>
                <th scope="col">Queue</th>
              </tr>
            </thead>
            <tbody>
              {value.map((f) => (
                <tr key={f.name}>
                  <th scope="row">
                    <a href={`#/fn/${encodeURIComponent(f.name)}`}>{f.name}</a>
                    {f.nodes.length > 0 && <span class="muted"> on {f.nodes.join(', ')}</span>}
                  </th>
                  <td>
                    <span class={`state state-${f.state}`}>{f.state}</span>
                  </td>
                  <td>{f.versions}</td>
                  <td>{splitText(f.traffic)}</td>
                  <td>{f.rate.toFixed(1)}</td>
                  <td>
                    {ms(f.p50)} / {ms(f.p99)}
                  </td>
                  <td>{(f.errorRate * 100).toFixed(1)}%</td>
                  <td>
                    {f.instances.busy}/{f.instances.idle}/{f.instances.loading}
                  </td>
                  <td>{f.queue}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

interface Job {
  id: string;
  function: string;
  status: string;
  attempts: number;
  node?: string;
  createdAt?: string;
  finishedAt?: string;
  result?: { json?: unknown; base64?: string; contentType: string };
  error?: { error: string; code: string };
}

export function Jobs() {
  const [id, setId] = useState(new URLSearchParams(location.hash.split('?')[1]).get('id') ?? '');
  const [job, setJob] = useState<Job | undefined>();
  const [error, setError] = useState<string | undefined>();
  const look = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      setJob(await api<Job>(`/api/v1/jobs/${encodeURIComponent(id.trim())}`));
    } catch (err) {
      setJob(undefined);
      setError((err as Error).message);
    }
  };
  return (
    <section aria-labelledby="jobs-title">
      <h1 id="jobs-title">Jobs</h1>
      <form onSubmit={look} class="row">
        <label for="job-id">Job id</label>
        <input id="job-id" value={id} onInput={(e) => setId(e.currentTarget.value)} />
        <button type="submit">Show</button>
      </form>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {job && (
        <dl class="facts">
          <dt>Function</dt>
          <dd>{job.function}</dd>
          <dt>Status</dt>
          <dd>{job.status}</dd>
          <dt>Attempts</dt>
          <dd>{job.attempts}</dd>
          {job.node && (
            <>
              <dt>Node</dt>
              <dd>{job.node}</dd>
            </>
          )}
          <dt>{job.error ? 'Error' : 'Result'}</dt>
          <dd>
            <pre>
              {job.error
                ? `${job.error.code}: ${job.error.error}`
                : JSON.stringify(job.result?.json ?? job.result, null, 2)}
            </pre>
          </dd>
        </dl>
      )}
    </section>
  );
}

export function Nodes() {
  const { value, error } = usePoll(() => api<{ pools: PoolInfo[] }>('/api/v1/pools'));
  const byNode = new Map<string, PoolInfo[]>();
  for (const p of value?.pools ?? [])
    byNode.set(p.node ?? 'this node', [...(byNode.get(p.node ?? 'this node') ?? []), p]);
  return (
    <section aria-labelledby="nodes-title">
      <h1 id="nodes-title">Nodes</h1>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {byNode.size === 0 && <p>No pools are running.</p>}
      {[...byNode].map(([node, pools]) => (
        <section key={node} aria-label={`Node ${node}`}>
          <h2>{node}</h2>
          <ul>
            {pools.map((p) => (
              <li key={`${p.function}@${p.version}`}>
                {p.function} v{p.version}: {p.state}, {p.instances.total} instance(s) on {p.device ?? '?'}, queue{' '}
                {p.queueDepth}
              </li>
            ))}
          </ul>
        </section>
      ))}
    </section>
  );
}
