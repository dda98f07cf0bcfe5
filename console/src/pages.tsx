/** The overview (every function live; for an invoke key, what it may call), jobs, and nodes. */
import { useRef, useState } from 'preact/hooks';

import { versionKey } from '../../sdk/spec/version-key.js';
import type { Catalog, FunctionListEntry, JobInfo, JobList, NodeInfo, PoolInfo } from './api.js';
import { api } from './api.js';
import { Alert, DataTable, shapeText, splitText, usePoll } from './ui.js';

/** A function's state from its pools: warm, loading, crash-looping, failing or cold. */
export function stateOf(pools: PoolInfo[]): string {
  const states = new Set(pools.map((p) => p.state));
  if (states.has('restarting')) return 'crash-looping';
  if (states.has('failed')) return 'failing';
  if (states.has('warm')) return 'warm';
  if (states.has('loading')) return 'loading';
  return 'cold';
}

const ms = (v: number | undefined) => (v === undefined ? '—' : v < 10 ? v.toFixed(1) : v.toFixed(0));

/** What the last sample saw of each function: when, and how many calls it had done. */
type Seen = Map<string, { at: number; done: number }>;

/** A function's row: its pools' totals, and its rate from the calls done since the last sample (`last`, updated). */
function overviewRow(f: FunctionListEntry, pools: PoolInfo[], last: Seen, now: number) {
  const mine = pools.filter((p) => p.function === f.name);
  const done = mine.reduce((n, p) => n + p.success + p.failure, 0);
  const failed = mine.reduce((n, p) => n + p.failure, 0);
  const before = last.get(f.name);
  last.set(f.name, { at: now, done });
  const rate = before && now > before.at ? Math.max(0, (done - before.done) / ((now - before.at) / 1000)) : 0;
  const lat = mine.filter((p) => p.latency);
  return {
    ...f,
    pools: mine,
    // The node's own verdict (no version can serve, most recent calls fail) over the pools'.
    state: f.health?.failing ? 'failing' : stateOf(mine),
    failingReason: f.health?.failing ? f.health.reason : undefined,
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
}

export function Overview() {
  const last = useRef<Seen>(new Map());
  const { value, error } = usePoll(async () => {
    const [{ functions }, { pools }] = await Promise.all([
      api<{ functions: FunctionListEntry[] }>('/api/v1/functions'),
      api<{ pools: PoolInfo[] }>('/api/v1/pools'),
    ]);
    const now = performance.now();
    return functions.map((f) => overviewRow(f, pools, last.current, now));
  });
  return (
    <section aria-labelledby="functions-title">
      <h1 id="functions-title">Functions</h1>
      <Alert error={error} />
      {!value ? (
        <p>Loading…</p>
      ) : value.length === 0 ? (
        <p>
          No functions yet: deploy one with <code>hearth deploy</code>.
        </p>
      ) : (
        <DataTable
          caption="Every function, refreshed each second"
          head={[
            'Function',
            'State',
            'Versions',
            'Traffic',
            'req/s',
            'p50 / p99 ms',
            'Errors',
            'Instances (busy/idle/loading)',
            'Queue',
          ]}
        >
          {value.map((f) => (
            <OverviewRow key={f.name} f={f} />
          ))}{' '}
        </DataTable>
      )}
    </section>
  );
}

function OverviewRow({ f }: { f: ReturnType<typeof overviewRow> }) {
  return (
    <tr>
      <th scope="row">
        <a href={`#/fn/${encodeURIComponent(f.name)}`}>{f.name}</a>
        {f.nodes.length > 0 && <span class="muted"> on {f.nodes.join(', ')}</span>}
      </th>
      <td>
        <span class={`state state-${f.state}`}>{f.state}</span>
        {f.failingReason && <div class="muted reason">{f.failingReason}</div>}
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
  );
}

/** The functions an invoke key may call (from the catalog): names, versions, traffic, inputs. */
export function Callable() {
  const { value, error } = usePoll(() => api<Catalog>('/api/v1/catalog'), 5000);
  return (
    <section aria-labelledby="functions-title">
      <h1 id="functions-title">Functions</h1>
      <p class="muted">This key may call functions and read its own jobs; an admin key shows pools, charts and logs.</p>
      <Alert error={error} />
      {!value ? (
        <p>Loading…</p>
      ) : (
        <DataTable head={['Function', 'Versions', 'Traffic', 'Inputs']}>
          {value.functions.map((f) => (
            <tr key={f.name}>
              <th scope="row">
                <a href={`#/fn/${encodeURIComponent(f.name)}`}>{f.name}</a>
              </th>
              <td>{f.versions.length}</td>
              <td>{splitText(f.traffic)}</td>
              <td>{f.versions.at(-1)?.inputs.map(shapeText).join(', ')}</td>
            </tr>
          ))}{' '}
        </DataTable>
      )}
    </section>
  );
}

const when = (iso: string | undefined) => (iso ? new Date(iso).toLocaleTimeString() : '—');

/** A webhook's outcome in a few words: its tries and the last one's answer. */
function deliveryText(job: JobInfo): string {
  if (!job.webhook) return '—';
  const last = job.deliveries?.at(-1);
  if (!last) return 'pending';
  const tries = job.deliveries!.length;
  return `${last.ok ? 'delivered' : 'failing'} (${last.status ?? last.error ?? '?'}), ${tries} ${tries === 1 ? 'try' : 'tries'}`;
}

/** Jobs newest first, by state (your own, or everyone's with an admin key), and one job's detail. */
export function Jobs() {
  const params = new URLSearchParams(location.hash.split('?')[1]);
  const [status, setStatus] = useState(params.get('status') ?? '');
  const [fn, setFn] = useState('');
  const [open, setOpen] = useState(params.get('id') ?? '');
  const query = new URLSearchParams({ limit: '50', ...(status ? { status } : {}), ...(fn ? { function: fn } : {}) });
  const { value, error } = usePoll(() => api<JobList>(`/api/v1/jobs?${query}`), 2000, [status, fn]);
  return (
    <section aria-labelledby="jobs-title">
      <h1 id="jobs-title">Jobs</h1>
      <form class="row" onSubmit={(e) => e.preventDefault()}>
        <label for="job-status">State</label>
        <select id="job-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
          <option value="">All</option>
          {['queued', 'running', 'succeeded', 'failed'].map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <label for="job-function">Function</label>
        <input id="job-function" value={fn} onChange={(e) => setFn(e.currentTarget.value.trim())} />
        <label for="job-id">Job id</label>
        <input id="job-id" value={open} onChange={(e) => setOpen(e.currentTarget.value.trim())} />
      </form>
      <Alert error={error} />
      {value && value.jobs.length === 0 && <p>No jobs{status ? ` ${status}` : ''}.</p>}
      {value && value.jobs.length > 0 && (
        <DataTable
          caption="Jobs, newest first, refreshed every 2 seconds"
          head={['Job', 'Function', 'State', 'Attempts', 'Node', 'Created', 'Webhook']}
        >
          {value.jobs.map((j) => (
            <tr key={j.id}>
              <th scope="row">
                <button type="button" class="link" onClick={() => setOpen(j.id)} aria-label={`Job ${j.id}`}>
                  {j.id.slice(0, 13)}
                </button>
              </th>
              <td>
                {j.function}
                {j.version ? ` v${j.version}` : ''}
              </td>
              <td>
                <span class={`state state-job-${j.status}`}>{j.status}</span>
                {j.error && <span class="muted"> {j.error.code}</span>}
              </td>
              <td>{j.attempts}</td>
              <td>{j.node ?? '—'}</td>
              <td>{when(j.createdAt)}</td>
              <td>{deliveryText(j)}</td>
            </tr>
          ))}{' '}
        </DataTable>
      )}
      {open && <JobDetail key={open} id={open} />}
    </section>
  );
}

function JobDetail({ id }: { id: string }) {
  const { value: job, error } = usePoll(() => api<JobInfo>(`/api/v1/jobs/${encodeURIComponent(id)}`), 2000, [id]);
  return (
    <section aria-labelledby="job-title" class="job">
      <h2 id="job-title">Job {id}</h2>
      <Alert error={error} />
      {job && (
        <dl class="facts">
          <dt>Function</dt>
          <dd>
            {job.function}
            {job.version ? ` v${job.version}` : ''}
          </dd>
          <dt>State</dt>
          <dd data-testid="job-status">{job.status}</dd>
          <dt>Attempts</dt>
          <dd>{job.attempts}</dd>
          <dt>Node</dt>
          <dd>{job.node ?? '—'}</dd>
          <dt>Times</dt>
          <dd>
            created {when(job.createdAt)}, started {when(job.startedAt)}, finished {when(job.finishedAt)}
          </dd>
          {job.requestId && (
            <>
              <dt>Request id</dt>
              <dd>
                <code>{job.requestId as string}</code>
              </dd>
            </>
          )}
          {job.webhook && (
            <>
              <dt>Webhook</dt>
              <dd>
                {job.webhook}
                <ol>
                  {(job.deliveries ?? []).map((d) => (
                    <li key={d.at}>
                      {when(d.at)}: {d.ok ? `delivered (${d.status})` : `failed: ${d.error ?? d.status}`}
                    </li>
                  ))}
                </ol>
              </dd>
            </>
          )}
          <dt>{job.error ? 'Error' : 'Result'}</dt>
          <dd>
            {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must take the keyboard's focus (WCAG 2.1.1) */}
            <pre data-testid="job-result" tabIndex={0}>
              {job.error
                ? `${job.error.code}: ${job.error.error}`
                : job.result
                  ? JSON.stringify(job.result.json ?? job.result, null, 2)
                  : 'not finished'}
            </pre>
          </dd>
        </dl>
      )}
    </section>
  );
}

const age = (ms: number) => (ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);

export function Nodes() {
  const { value, error } = usePoll(() =>
    Promise.all([api<{ nodes: NodeInfo[] }>('/api/v1/nodes'), api<{ pools: PoolInfo[] }>('/api/v1/pools')]),
  );
  const [nodes, pools] = value ? [value[0].nodes, value[1].pools] : [[], []];
  return (
    <section aria-labelledby="nodes-title">
      <h1 id="nodes-title">Nodes</h1>
      <Alert error={error} />
      {nodes.map((n) => {
        const mine = pools.filter((p) => (p.node ?? 'local') === n.id);
        return (
          <section key={n.id} aria-label={`Node ${n.id}`} class="node">
            <h2>
              {n.id}
              {n.self && <span class="muted"> (this node)</span>}
            </h2>
            <p class="muted" data-testid="heartbeat">
              up since {new Date(n.startedAt).toLocaleString()}
              {n.http ? `, heartbeat ${age(n.heartbeatAgeMs)} ago, at ${n.http}` : ''}
            </p>
            {mine.length === 0 ? (
              <p>No pools.</p>
            ) : (
              <ul>
                {mine.map((p) => (
                  <li key={versionKey(p.function, p.version)}>
                    {p.function} v{p.version}: {p.state}, {p.instances.total} instance(s) on {p.device ?? '?'}, queue{' '}
                    {p.queueDepth}
                  </li>
                ))}
              </ul>
            )}
          </section>
        );
      })}
    </section>
  );
}
