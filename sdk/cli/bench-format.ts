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

/** Each CSV column: its name and its value in a step (absent: an empty field). */
const CSV_COLUMNS: [string, (s: BenchStep) => unknown][] = [
  ['step', (s) => s.step],
  ['concurrency', (s) => s.concurrency],
  ['rate', (s) => s.rate],
  ['requests', (s) => s.requests],
  ['ok', (s) => s.ok],
  [
    'errors',
    (s) =>
      Object.entries(s.errors)
        .map(([code, count]) => `${code}:${count}`)
        .join(';'),
  ],
  ['seconds', (s) => s.seconds],
  ['req_per_s', (s) => s.reqPerS],
  ['p50_ms', (s) => s.latencyMs.p50],
  ['p90_ms', (s) => s.latencyMs.p90],
  ['p99_ms', (s) => s.latencyMs.p99],
  ['mean_ms', (s) => s.latencyMs.mean],
  ['max_ms', (s) => s.latencyMs.max],
  ['late', (s) => s.late],
  ['client_cpu_us', (s) => s.clientCpuUs],
  ['client_cpu_percent', (s) => s.clientCpuPercent],
  ['server_success', (s) => s.server?.success],
  ['server_failure', (s) => s.server?.failure],
  ['server_request_us', (s) => s.server?.requestUs],
  ['queue_us', (s) => s.server?.queueUs],
  ['compute_input_us', (s) => s.server?.computeInputUs],
  ['compute_infer_us', (s) => s.server?.computeInferUs],
  ['compute_output_us', (s) => s.server?.computeOutputUs],
  ['pre_us', (s) => s.server?.preUs],
  ['post_us', (s) => s.server?.postUs],
];

/** A CSV field: quoted where it holds a comma, a quote or a line break. */
const field = (v: unknown): string => {
  const text = v === undefined ? '' : String(v);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

/** The report as CSV: a header line, then a line per step (errors as `code:count` separated by `;`). */
export function benchCsv(report: BenchReport): string {
  const lines = report.steps.map((s) => CSV_COLUMNS.map(([, value]) => field(value(s))).join(','));
  return [CSV_COLUMNS.map(([name]) => name).join(','), ...lines].join('\n');
}
