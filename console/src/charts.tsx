/**
 * A function's last 15 minutes as charts (uPlot): requests and errors, latency, batch size, queue
 * and instances — of one version, or of every version combined.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';

import type { SeriesSample } from './api.js';
import { api } from './api.js';
import { usePoll } from './ui.js';

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

export function Charts({ name }: { name: string }) {
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

/**
 * The y-axis as wide as its longest label (uPlot's axis-autosize): a fixed width clipped "12,000"
 * to ",000". Measured in the axis's own font; the second sizing cycle keeps the first's answer.
 */
export function fitLabels(self: uPlot, values: string[] | null, axisIdx: number, cycleNum: number): number {
  const axis = self.axes[axisIdx]!;
  const sized = (axis as { _size?: number })._size;
  if (cycleNum > 1 && sized !== undefined) return sized;
  let size = (axis.ticks?.size ?? 10) + (axis.gap ?? 5);
  const longest = (values ?? []).reduce((a, v) => (v.length > a.length ? v : a), '');
  if (longest !== '') {
    self.ctx.font = (axis.font as unknown as string[])[0]!;
    size += self.ctx.measureText(longest).width / devicePixelRatio;
  }
  return Math.ceil(size);
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
        axes: [{}, { size: fitLabels }],
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
