import type { Command } from 'commander';

import type { CliContext } from '../context.js';
import type { PoolInfo } from '../../client.js';
import { columns, printable } from '../format.js';

/** `hearth top` */
export function register(program: Command, { client, json, integer }: CliContext): void {
  program
    .command('top')
    .description(
      'every function live: its pools, instances by state, queue, requests/s, mean and p99 latency in ms (p99 of the latest 1024 requests); a function with no pool shows as cold',
    )
    .option('--interval <ms>', 'refresh interval', integer('--interval'), 1000)
    .option('--once', 'print one sample and exit')
    .action(async (o: { interval: number; once?: boolean }) => {
      const hearth = client();
      let last = new Map<string, PoolInfo>();
      for (;;) {
        const [pools, functions] = await Promise.all([hearth.pools(), hearth.list()]);
        const rows = pools.map((p) => {
          const key = `${p.node ?? ''}/${p.function}@${p.version}`;
          const before = last.get(key);
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
            reqPerS: before ? Math.round((done / o.interval) * 1000) : null,
            meanMs: count > 0 ? Math.round(us / count / 100) / 10 : null,
            p99Ms: p.latency?.p99Ms ?? null,
          };
        });
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
        last = new Map(pools.map((p) => [`${p.node ?? ''}/${p.function}@${p.version}`, p]));
        if (json()) console.log(JSON.stringify([...rows, ...cold]));
        else {
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
        if (o.once) return;
        await new Promise((res) => setTimeout(res, o.interval));
      }
    });
}
