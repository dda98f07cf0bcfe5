/** `hearth bench`'s report for people (a table) and for programs (CSV); pure, tested without a network. */
import type { BenchReport, BenchStep } from '../bench/index.js';
import { printable, table } from './format.js';

const n = (v: number | undefined, digits = 2): string => (v === undefined ? '' : v.toFixed(digits));
const errorsText = (s: BenchStep): string =>
  Object.entries(s.errors)
    .map(([code, count]) => `${code}×${count}`)
    .join(' ');

/** The report as a table, what the columns mean under it, and each error code's first message. */
export function benchTable(report: BenchReport): string {
  const hooks = report.steps.some((s) => s.server?.preUs !== undefined);
  const head = [
    'step',
    'req/s',
    'p50 ms',
    'p90 ms',
    'p99 ms',
    'ok',
    'errors',
    ...(report.mode === 'rate' ? ['late'] : []),
    'server µs',
    'queue',
    'infer',
    ...(hooks ? ['pre', 'post'] : []),
    'client µs/req',
  ];
  const rows = report.steps.map((s) => [
    s.step,
    n(s.reqPerS, 1),
    n(s.latencyMs.p50, 3),
    n(s.latencyMs.p90, 3),
    n(s.latencyMs.p99, 3),
    s.ok,
    errorsText(s) || '0',
    ...(report.mode === 'rate' ? [s.late ?? 0] : []),
    n(s.server?.requestUs, 0),
    n(s.server?.queueUs, 0),
    n(s.server?.computeInferUs, 0),
    ...(hooks ? [n(s.server?.preUs, 0), n(s.server?.postUs, 0)] : []),
    `${n(s.clientCpuUs, 1)} (${Math.round(s.clientCpuPercent)}%)`,
  ]);
  const messages = new Map<string, string>();
  for (const s of report.steps)
    for (const [code, m] of Object.entries(s.errorMessages)) if (!messages.has(code)) messages.set(code, m);
  return [
    `${report.name}: ${report.target}, ${report.input} inputs, ${report.mode === 'rate' ? 'open loop' : 'closed loop'}`,
    table(head, rows),
    "server µs, queue, infer (and pre, post): the server's own statistics over the step, per request; " +
      "client µs/req: this process's CPU per request (its own overhead), and in brackets as a share of one core.",
    ...[...messages].map(([code, m]) => printable(`${code}: ${m}`)),
  ].join('\n');
}

const CSV_HEAD = [
  'step',
  'concurrency',
  'rate',
  'requests',
  'ok',
  'errors',
  'seconds',
  'req_per_s',
  'p50_ms',
  'p90_ms',
  'p99_ms',
  'mean_ms',
  'max_ms',
  'late',
  'client_cpu_us',
  'client_cpu_percent',
  'server_success',
  'server_failure',
  'server_request_us',
  'queue_us',
  'compute_input_us',
  'compute_infer_us',
  'compute_output_us',
  'pre_us',
  'post_us',
];

/** A CSV field: quoted where it holds a comma, a quote or a line break. */
const field = (v: unknown): string => {
  const text = v === undefined ? '' : String(v);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

/** The report as CSV: a header line, then a line per step (errors as `code:count` separated by `;`). */
export function benchCsv(report: BenchReport): string {
  const lines = report.steps.map((s) =>
    [
      s.step,
      s.concurrency,
      s.rate,
      s.requests,
      s.ok,
      Object.entries(s.errors)
        .map(([code, count]) => `${code}:${count}`)
        .join(';'),
      s.seconds,
      s.reqPerS,
      s.latencyMs.p50,
      s.latencyMs.p90,
      s.latencyMs.p99,
      s.latencyMs.mean,
      s.latencyMs.max,
      s.late,
      s.clientCpuUs,
      s.clientCpuPercent,
      s.server?.success,
      s.server?.failure,
      s.server?.requestUs,
      s.server?.queueUs,
      s.server?.computeInputUs,
      s.server?.computeInferUs,
      s.server?.computeOutputUs,
      s.server?.preUs,
      s.server?.postUs,
    ]
      .map(field)
      .join(','),
  );
  return [CSV_HEAD.join(','), ...lines].join('\n');
}
