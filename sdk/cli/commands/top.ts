/**
 * `hearth top`: every function live, refreshed each interval — its pools (rates from the difference
 * with the previous sample), the functions the node says are failing, and those with no pool.
 */
import type { Command } from 'commander';

import type { FunctionListEntry, PoolInfo } from '../../client.js';
import { versionKey } from '../../spec/version-key.js';
import type { CliContext } from '../context.js';
import { columns, printable } from '../format.js';

interface TopFlags {
  interval: number;
  once?: boolean;
}

/** One sample of the node: a row per pool, a row per function with none, and the failing ones' reasons. */
interface Sample {
  rows: ReturnType<typeof poolRow>[];
  cold: { function: string; version: number; state: string; reason?: string }[];
  failing: Map<string, string>;
}

/** `hearth top` */
export function register(program: Command, context: CliContext): void {
  program
    .command('top')
    .description(
      'every function live: its pools, instances by state, queue, requests/s, mean and p99 latency in ms (p99 of the latest 1024 requests); a function with no pool shows as cold',
    )
    .option('--interval <ms>', 'refresh interval', context.integer('--interval'), 1000)
    .option('--once', 'print one sample and exit')
    .action((o: TopFlags) => topAction(context, o));
}

async function topAction({ client, json }: CliContext, o: TopFlags): Promise<void> {
  const hearth = client();
  let last = new Map<string, PoolInfo>();
  for (;;) {
    const [pools, functions] = await Promise.all([hearth.pools(), hearth.list()]);
    const sample = topSample(pools, functions, last, o.interval);
    last = new Map(pools.map((p) => [poolKey(p), p]));
    if (json()) console.log(JSON.stringify([...sample.rows, ...sample.cold]));
    else printTop(sample, o);
    if (o.once) return;
    await new Promise((res) => setTimeout(res, o.interval));
  }
}

const poolKey = (p: PoolInfo): string => `${p.node ?? ''}/${versionKey(p.function, p.version)}`;

/** A pool's row: its rates from the difference with its previous sample (`before`), if any. */
function poolRow(p: PoolInfo, before: PoolInfo | undefined, interval: number) {
  const done = before ? p.success + p.failure - before.success - before.failure : 0;
  const us = (p.durations?.request?.totalUs ?? 0) - (before?.durations?.request?.totalUs ?? 0);
  const count = (p.durations?.request?.count ?? 0) - (before?.durations?.request?.count ?? 0);
  return {
    node: p.node,
    function: p.function,
    version: p.version,
    state: p.state,
    instances: p.instances,
    queueDepth: p.queueDepth,
    pending: p.pending,
    reqPerS: before ? Math.round((done / interval) * 1000) : null,
    meanMs: count > 0 ? Math.round(us / count / 100) / 10 : null,
    p99Ms: p.latency?.p99Ms ?? null,
  };
}

function topSample(
  pools: PoolInfo[],
  functions: FunctionListEntry[],
  last: Map<string, PoolInfo>,
  interval: number,
): Sample {
  const rows = pools.map((p) => poolRow(p, last.get(poolKey(p)), interval));
  // Functions the node says are failing (no version can serve, most recent calls fail) show
  // so on every row, with the last reason under the table; with no pool anywhere (scaled to
  // zero, never called), one row each.
  const failing = new Map(
    functions.filter((f) => f.health?.failing).map((f) => [f.name, f.health?.reason ?? 'failing']),
  );
  for (const r of rows)
    if (failing.has(r.function)) Object.assign(r, { state: 'failing', reason: failing.get(r.function) });
  const pooled = new Set(pools.map((p) => p.function));
  const cold = functions
    .filter((f) => !pooled.has(f.name))
    .map((f) => ({
      function: f.name,
      version: f.latest ?? 0,
      state: failing.has(f.name) ? 'failing' : 'cold',
      ...(failing.has(f.name) ? { reason: failing.get(f.name) } : {}),
    }));
  return { rows, cold, failing };
}

/** The sample as a table (the screen cleared first on a terminal, unless --once), the failing reasons under it. */
function printTop({ rows, cold, failing }: Sample, o: TopFlags): void {
  if (!o.once && process.stdout.isTTY) process.stdout.write('\x1b[2J\x1b[H');
  // The node column only in cluster mode (pools on more than one node).
  const nodes = new Set(rows.map((r) => r.node ?? ''));
  const withNode = nodes.size > 1;
  const head = [
    'function',
    'v',
    ...(withNode ? ['node'] : []),
    'state',
    'inst b/i/l',
    'queue',
    'pend',
    'req/s',
    'mean',
    'p99',
  ];
  const body = [
    ...rows.map((r) => [
      r.function,
      r.version,
      ...(withNode ? [r.node ?? ''] : []),
      r.state,
      `${r.instances.total} ${r.instances.busy}/${r.instances.idle}/${r.instances.loading}`,
      r.queueDepth,
      r.pending,
      r.reqPerS ?? '…',
      r.meanMs ?? '',
      r.p99Ms ?? '',
    ]),
    ...cold.map((c) => [c.function, c.version, ...(withNode ? [''] : []), c.state, '0', '', '', '', '', '']),
  ];
  const max = [16, 4, ...(withNode ? [12] : []), 10];
  console.log(body.length === 0 ? 'no functions' : columns(head, body, max));
  // One line each, within the 80 columns the table keeps to.
  for (const [name, reason] of failing) console.log(printable(`${name} failing: ${reason}`.slice(0, 80)));
}
