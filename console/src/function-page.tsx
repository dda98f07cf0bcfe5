/** One function: versions and traffic, scaling, charts, cold starts, errors, its log, and Try it. */
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';

import type { Catalog, FunctionInfo, FunctionLogEntry, SeriesSample } from './api.js';
import { api, followLogs, headers, send } from './api.js';
import { Alert, DataTable, shapeText, splitText, usePoll } from './pages.js';
import { canaryText } from '../../sdk/api/canary-text.js';

export function FunctionPage({ name }: { name: string }) {
  const path = `/api/v1/functions/${encodeURIComponent(name)}`;
  const [tick, setTick] = useState(0);
  const { value: info, error } = usePoll(() => api<FunctionInfo>(path), 1000, [name, tick]);
  const refresh = () => setTick((t) => t + 1);
  return (
    <article aria-labelledby="fn-title">
      <h1 id="fn-title">{name}</h1>
      <Alert error={error} />
      {info && (
        <>
          <Versions info={info} path={path} onChange={refresh} />
          <Charts name={name} />
          <ColdStarts info={info} />
          <TryIt name={info.name} io={ioOf(info.versions.at(-1)?.spec)} />
          <Logs name={name} />
        </>
      )}
    </article>
  );
}

function Versions({ info, path, onChange }: { info: FunctionInfo; path: string; onChange: () => void }) {
  const ready = info.versions.filter((v) => v.status === 'ready');
  const [weights, setWeights] = useState<Record<string, string>>({});
  const [confirming, setConfirming] = useState<Record<string, number> | undefined>();
  const [message, setMessage] = useState<string | undefined>();
  const proposed = () =>
    Object.fromEntries(
      ready
        .map((v) => [String(v.version), Number(weights[v.version] ?? info.traffic[v.version] ?? 0)] as const)
        .filter(([, w]) => w > 0),
    );
  const apply = async () => {
    try {
      const r = await send<{ traffic: Record<string, number> }>(`${path}/traffic`, 'PUT', { traffic: confirming });
      setMessage(`Traffic is now ${splitText(r.traffic)}`);
      setWeights({});
      onChange();
    } catch (e) {
      setMessage((e as Error).message);
    }
    setConfirming(undefined);
  };
  const rollback = async () => {
    try {
      const r = await send<{ traffic: Record<string, number> }>(`${path}/rollback`, 'POST', {});
      setMessage(`Rolled back: traffic is now ${splitText(r.traffic)}`);
      onChange();
    } catch (e) {
      setMessage((e as Error).message);
    }
  };
  const serving = info.versions.filter((v) => (info.traffic[v.version] ?? 0) > 0);
  return (
    <section aria-labelledby="versions-title">
      <h2 id="versions-title">Versions and traffic</h2>
      {info.canary && (
        <p class={info.canary.state === 'rolled-back' ? 'canary error' : 'canary'} data-canary={info.canary.state}>
          {canaryText(info.canary)}
        </p>
      )}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setConfirming(proposed());
        }}
      >
        <DataTable head={['Version', 'Status', 'Created', 'Traffic weight']}>
          {info.versions.map((v) => (
            <tr key={v.version}>
              <th scope="row">v{v.version}</th>
              <td>
                {v.status}
                {v.reason && <span class="muted"> — {v.reason}</span>}
              </td>
              <td>{new Date(v.createdAt).toLocaleString()}</td>
              <td>
                {v.status === 'ready' ? (
                  <input
                    type="number"
                    min="0"
                    aria-label={`Traffic weight of v${v.version}`}
                    value={weights[v.version] ?? String(info.traffic[v.version] ?? 0)}
                    onInput={(e) => setWeights({ ...weights, [v.version]: e.currentTarget.value })}
                  />
                ) : (
                  '—'
                )}
              </td>
            </tr>
          ))}{' '}
        </DataTable>
        <div class="row">
          <button type="submit">Change traffic…</button>
          {info.previousTraffic && (
            <button type="button" onClick={() => void rollback()}>
              Roll back to {splitText(info.previousTraffic)}
            </button>
          )}
        </div>
      </form>
      {confirming && (
        <dialog open aria-labelledby="confirm-title" class="dialog">
          <h3 id="confirm-title">Change the traffic split?</h3>
          <p>
            From <strong>{splitText(info.traffic)}</strong> to <strong>{splitText(confirming)}</strong>.
          </p>
          <div class="row">
            <button type="button" onClick={() => void apply()}>
              Apply
            </button>
            <button type="button" onClick={() => setConfirming(undefined)}>
              Cancel
            </button>
          </div>
        </dialog>
      )}
      {message && <output class="message">{message}</output>}
      {serving.map((v) => (
        <p key={v.version} class="muted">
          v{v.version} scaling: min {v.spec.scaling.minInstances}, max {v.spec.scaling.maxInstances}, target queue{' '}
          {v.spec.scaling.targetQueueDepth}, idle {v.spec.scaling.scaleDownAfterS} s
        </p>
      ))}
    </section>
  );
}

const CHARTS: { title: string; series: { label: string; pick: (s: SeriesSample) => number | null }[] }[] = [
  {
    title: 'Requests per second',
    series: [
      { label: 'req/s', pick: (s) => s.reqPerS },
      { label: 'errors/s', pick: (s) => s.errPerS },
    ],
  },
  {
    title: 'Latency (ms)',
    series: [
      { label: 'p50', pick: (s) => s.p50Ms },
      { label: 'p99', pick: (s) => s.p99Ms },
    ],
  },
  { title: 'Batch size (rows per forward)', series: [{ label: 'mean batch', pick: (s) => s.meanBatch }] },
  {
    title: 'Queue and instances',
    series: [
      { label: 'queue', pick: (s) => s.queueDepth },
      { label: 'instances', pick: (s) => s.instances },
    ],
  },
];
const COLORS = ['#2563eb', '#dc2626', '#059669', '#9333ea'];

/**
 * Every version's samples as one series, second by second (the sampler takes all pools at the same
 * instant): rates, queues and instances add up; latency is the worst version's; the mean batch is
 * weighted by each version's requests.
 */
export function combine(rings: SeriesSample[][]): SeriesSample[] {
  const byTime = new Map<number, SeriesSample[]>();
  for (const ring of rings) for (const s of ring) byTime.set(s.at, [...(byTime.get(s.at) ?? []), s]);
  const worst = (xs: (number | null)[]) => {
    const known = xs.filter((x): x is number => x !== null);
    return known.length ? Math.max(...known) : null;
  };
  const sum = (xs: SeriesSample[], k: 'reqPerS' | 'errPerS' | 'queueDepth' | 'instances' | 'busy' | 'loading') =>
    xs.reduce((n, x) => n + x[k], 0);
  return [...byTime.entries()]
    .sort(([a], [b]) => a - b)
    .map(([at, xs]) => {
      const batched = xs.filter((x) => x.meanBatch !== null);
      const weight = batched.reduce((n, x) => n + x.reqPerS, 0);
      return {
        at,
        reqPerS: sum(xs, 'reqPerS'),
        errPerS: sum(xs, 'errPerS'),
        p50Ms: worst(xs.map((x) => x.p50Ms)),
        p99Ms: worst(xs.map((x) => x.p99Ms)),
        meanBatch:
          batched.length === 0
            ? null
            : weight > 0
              ? batched.reduce((n, x) => n + x.meanBatch! * x.reqPerS, 0) / weight
              : worst(batched.map((x) => x.meanBatch)),
        queueDepth: sum(xs, 'queueDepth'),
        instances: sum(xs, 'instances'),
        busy: sum(xs, 'busy'),
        loading: sum(xs, 'loading'),
      };
    });
}

function Charts({ name }: { name: string }) {
  const [shown, setShown] = useState('all');
  const { value } = usePoll(
    () => api<{ versions: Record<string, SeriesSample[]> }>(`/api/v1/functions/${encodeURIComponent(name)}/series`),
    1000,
    [name],
  );
  const versions = Object.keys(value?.versions ?? {}).sort((a, b) => Number(a) - Number(b));
  const samples =
    shown === 'all'
      ? combine(Object.values(value?.versions ?? {}))
      : (value?.versions[shown] ?? ([] as SeriesSample[]));
  return (
    <section aria-labelledby="charts-title">
      <h2 id="charts-title">Last 15 minutes</h2>
      <div class="row">
        <label for="chart-version">Version</label>
        <select id="chart-version" value={shown} onChange={(e) => setShown(e.currentTarget.value)}>
          <option value="all">All versions</option>
          {versions.map((v) => (
            <option key={v} value={v}>
              v{v}
            </option>
          ))}
        </select>
      </div>
      <div class="charts">
        {CHARTS.map((c) => (
          <Chart key={c.title} title={c.title} samples={samples} series={c.series} />
        ))}
      </div>
    </section>
  );
}

function Chart({
  title,
  samples,
  series,
}: {
  title: string;
  samples: SeriesSample[];
  series: (typeof CHARTS)[number]['series'];
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>();
  const data: uPlot.AlignedData = [
    samples.map((s) => s.at / 1000),
    ...series.map((x) => samples.map((s) => x.pick(s))),
  ];
  useEffect(() => {
    if (!box.current) return;
    const width = Math.max(260, box.current.clientWidth);
    plot.current = new uPlot(
      {
        width,
        height: 160,
        legend: { show: true },
        series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i], width: 1.5, spanGaps: false }))],
        axes: [{}, { size: 44 }],
      },
      data,
      box.current,
    );
    return () => plot.current?.destroy();
  }, []);
  useEffect(() => plot.current?.setData(data), [samples]);
  const last = samples.at(-1);
  const summary = last
    ? series.map((s) => `${s.label} ${s.pick(last)?.toFixed(1) ?? '—'}`).join(', ')
    : 'no samples yet';
  return (
    <figure
      class="chart"
      role="img"
      aria-label={`${title}: ${samples.length} samples; now ${summary}`}
      data-points={samples.length}
    >
      <figcaption>{title}</figcaption>
      <div ref={box} />
    </figure>
  );
}

function ColdStarts({ info }: { info: FunctionInfo }) {
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

/** What Try it needs of a version: its inputs, batching, and whether a hook reads the body. */
interface TryIo {
  inputs: { name: string; dtype: string; dims: number[] }[];
  maxBatchSize: number;
  hook: boolean;
}

const ioOf = (spec: FunctionInfo['versions'][number]['spec'] | undefined): TryIo | undefined =>
  spec && { inputs: spec.inputs, maxBatchSize: spec.maxBatchSize, hook: Boolean(spec.hook) };

/** Past this many values a row, zeros to start from are no help (an image is 150,528): a file is. */
const MAX_SAMPLE_VALUES = 1024;

const valuesOf = (dims: number[]): number => dims.reduce((n, d) => n * Math.max(1, d), 1);

/** What a body too large to pre-fill should hold, said in the empty box. */
function bodyHint(io: TryIo | undefined): string | undefined {
  const big = io?.inputs.find((i) => valuesOf(i.dims) > MAX_SAMPLE_VALUES);
  return (
    big &&
    `${big.name} takes ${big.dtype} [${big.dims.join(', ')}] (${valuesOf(big.dims).toLocaleString('en-US')} values a row): choose a file below, or paste a body`
  );
}

/**
 * A body to start from: the default hook's {"inputs": {name: zeros}}, or rows of zeros for a hook;
 * empty, with a hint, where an input is too large for zeros to help.
 */
function sampleBody(io: TryIo | undefined): string {
  if (!io) return '{}';
  if (bodyHint(io) !== undefined) return '';
  const zeros = (dims: number[]): unknown =>
    dims.length === 0 ? 0 : Array.from({ length: Math.max(1, dims[0]!) }, () => zeros(dims.slice(1)));
  const one = (dims: number[]) => (io.maxBatchSize > 0 ? [zeros(dims)] : zeros(dims));
  if (!io.hook) return JSON.stringify({ inputs: Object.fromEntries(io.inputs.map((i) => [i.name, one(i.dims)])) });
  return JSON.stringify({ inputs: one(io.inputs[0]?.dims ?? []) });
}

/** A function as an invoke key sees it: its versions' inputs and outputs, and Try it. */
export function CallablePage({ name }: { name: string }) {
  const { value, error } = usePoll(() => api<Catalog>('/api/v1/catalog'), 5000, [name]);
  const entry = value?.functions.find((f) => f.name === name);
  const main = entry?.versions.filter((v) => v.status === 'ready').at(-1);
  return (
    <article aria-labelledby="fn-title">
      <h1 id="fn-title">{name}</h1>
      <Alert error={error} />
      {value && !entry && <p class="error">No function {name}.</p>}
      {entry && (
        <>
          <section aria-labelledby="versions-title">
            <h2 id="versions-title">Versions</h2>
            <p class="muted">Traffic: {splitText(entry.traffic)}</p>
            <ul>
              {entry.versions.map((v) => (
                <li key={v.version}>
                  v{v.version} {v.status}: {v.inputs.map(shapeText).join(', ')} → {v.outputs.map(shapeText).join(', ')}
                </li>
              ))}
            </ul>
          </section>
          <TryIt key={main?.version} name={name} io={main} />
        </>
      )}
    </article>
  );
}

function TryIt({ name, io }: { name: string; io: TryIo | undefined }) {
  const [body, setBody] = useState(() => sampleBody(io));
  const [file, setFile] = useState<File | undefined>();
  const [result, setResult] = useState<{ status: number; ms: number; text: string } | undefined>();
  const url = `${location.origin}/fn/${encodeURIComponent(name)}`;
  const run = async (e: Event) => {
    e.preventDefault();
    const started = performance.now();
    const r = await fetch(`/fn/${encodeURIComponent(name)}`, {
      method: 'POST',
      headers: headers({ 'content-type': file ? file.type || 'application/octet-stream' : 'application/json' }),
      body: file ?? body,
    });
    const text = await r.text();
    let shown = text;
    try {
      shown = JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      // not JSON: shown as it came
    }
    setResult({ status: r.status, ms: performance.now() - started, text: shown });
  };
  const oneLine = body.replace(/\s*\n\s*/g, ' ');
  return (
    <section aria-labelledby="try-title">
      <h2 id="try-title">Try it</h2>
      <form onSubmit={(e) => void run(e)}>
        <label for="try-body">Request body (JSON)</label>
        <textarea
          id="try-body"
          rows={6}
          value={body}
          placeholder={bodyHint(io)}
          onInput={(e) => setBody(e.currentTarget.value)}
          disabled={Boolean(file)}
        />
        <label for="try-file">Or a file (an image, bytes)</label>
        <input id="try-file" type="file" onChange={(e) => setFile(e.currentTarget.files?.[0])} />
        <button type="submit">Send</button>
      </form>
      {result && (
        <div class="result" aria-live="polite">
          <p>
            <strong data-testid="try-status">{result.status}</strong> in {result.ms.toFixed(0)} ms
          </p>
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must take the keyboard's focus (WCAG 2.1.1) */}
          <pre data-testid="try-response" tabIndex={0}>
            {result.text}
          </pre>
        </div>
      )}
      <details>
        <summary>The same call from a terminal or code</summary>
        <pre>{`curl -s ${url} -H 'content-type: application/json'${headers().authorization ? " -H 'authorization: Bearer $HEARTH_API_KEY'" : ''} -d '${oneLine}'`}</pre>
        <pre>{`hearth invoke ${name} --data '${oneLine}'`}</pre>
        <pre>{`import { Hearth } from '@hearth/sdk';\nconst hearth = new Hearth({ url: '${location.origin}', apiKey: process.env.HEARTH_API_KEY });\nconsole.log((await hearth.invoke('${name}', ${oneLine})).json());`}</pre>
      </details>
    </section>
  );
}

function Logs({ name }: { name: string }) {
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
              <li key={`${e.at}${e.msg}`}>
                {new Date(e.at).toLocaleTimeString()} {e.msg} {e.requestId && <code>{e.requestId}</code>}
              </li>
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
