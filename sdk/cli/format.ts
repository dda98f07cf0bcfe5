/**
 * Text a function wrote (its hook's console, its errors), safe for a terminal: control characters
 * (an ANSI escape that clears the screen or retitles the window) shown as `?`, newlines kept.
 */
export function printable(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
  return text.replace(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g, '?');
}

/** What the CLI prints for people: tables and short texts (pure; `--json` prints the values instead). */
import Table from 'cli-table3';

import type { FunctionInfo, JobInfo, PoolInfo } from '../client.js';

export function table(head: string[], rows: (string | number)[][]): string {
  const t = new Table({ head, style: { head: [], border: [] } });
  t.push(...rows.map((r) => r.map(String)));
  return t.toString();
}

/**
 * Plain columns, two spaces apart, no borders: what fits a live view in 80 columns. A cell longer
 * than its column's `max` is cut with an ellipsis.
 */
export function columns(head: string[], rows: (string | number)[][], max: number[] = []): string {
  const cut = (v: string | number, i: number) => {
    const text = String(v);
    const limit = max[i];
    return limit !== undefined && text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
  };
  const cells = [head, ...rows].map((r) => r.map(cut));
  const widths = head.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** The version traffic mostly goes to. */
export function mainVersion(info: FunctionInfo): number | undefined {
  const [top] = Object.entries(info.traffic).sort((a, b) => b[1] - a[1]);
  return top ? Number(top[0]) : undefined;
}

export function trafficText(traffic: Record<string, number>): string {
  return (
    Object.entries(traffic)
      .map(([v, w]) => `v${v}=${w}`)
      .join(' ') || 'none'
  );
}

export function versionsTable(info: FunctionInfo): string {
  return table(
    ['version', 'status', 'traffic', 'created', 'reason'],
    info.versions.map((v) => [v.version, v.status, info.traffic[v.version] ?? 0, v.createdAt, v.reason ?? '']),
  );
}

export function poolsTable(pools: PoolInfo[]): string {
  return table(
    ['version', 'node', 'state', 'instances', 'queue', 'in pool', 'ok', 'failed'],
    pools.map((p) => [
      p.version,
      p.node ?? '',
      p.state,
      p.instances.total,
      p.queueDepth,
      p.pending,
      p.success,
      p.failure,
    ]),
  );
}

export function jobsTable(jobs: JobInfo[]): string {
  if (jobs.length === 0) return 'no jobs';
  return table(
    ['id', 'function', 'status', 'attempts', 'node', 'created', 'webhook'],
    jobs.map((j) => [
      j.id,
      `${j.function}${j.version ? ` v${j.version}` : ''}`,
      j.error ? `${j.status} (${j.error.code})` : j.status,
      j.attempts,
      j.node ?? '—',
      j.createdAt ?? '—',
      deliveryText(j),
    ]),
  );
}

/** A webhook's outcome in a few words: its tries and the last one's answer. */
function deliveryText(job: JobInfo): string {
  if (!job.webhook) return '—';
  const tries = job.deliveries ?? [];
  const last = tries.at(-1);
  if (!last) return 'pending';
  const answer = last.ok ? `delivered (${last.status})` : `failing (${last.status ?? last.error ?? '?'})`;
  return `${answer}, ${tries.length} ${tries.length === 1 ? 'try' : 'tries'}`;
}

export function jobText(job: JobInfo): string {
  const lines = [
    `job ${job.id}: ${job.status} (${job.function}${job.version ? ` v${job.version}` : ''}, attempts ${job.attempts})`,
  ];
  if (job.result)
    lines.push(
      job.result.json !== undefined
        ? JSON.stringify(job.result.json, null, 2)
        : `${job.result.contentType}, ${job.result.base64?.length ?? 0} base64 characters`,
    );
  if (job.error) lines.push(`error: ${job.error.error} (${job.error.code})`);
  if (job.webhook) lines.push(`webhook ${job.webhook}: ${deliveryText(job)}`);
  return lines.join('\n');
}
