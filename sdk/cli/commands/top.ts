import type { Command } from 'commander';

import type { CliContext } from '../context.js';
import type { PoolInfo } from '../../client.js';
import { table } from '../format.js';

/** `hearth top` */
export function register(program: Command, { client, json, integer }: CliContext): void {
  program
    .command('top')
    .description(
      'pools live: instances by state, queue, requests/s, mean and p99 latency (p99 of the latest 1024 requests)',
    )
    .option('--interval <ms>', 'refresh interval', integer('--interval'), 1000)
    .option('--once', 'print one sample and exit')
    .action(async (o: { interval: number; once?: boolean }) => {
      const hearth = client();
      let last = new Map<string, PoolInfo>();
      for (;;) {
        const pools = await hearth.pools();
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
        last = new Map(pools.map((p) => [`${p.node ?? ''}/${p.function}@${p.version}`, p]));
        if (json()) console.log(JSON.stringify(rows));
        else {
          if (!o.once && process.stdout.isTTY) process.stdout.write('\x1b[2J\x1b[H');
          console.log(
            rows.length === 0
              ? 'no pools'
              : table(
                  [
                    'function',
                    'v',
                    'node',
                    'state',
                    'inst busy/idle/loading',
                    'queue',
                    'in pool',
                    'req/s',
                    'mean ms',
                    'p99 ms',
                  ],
                  rows.map((r) => [
                    r.function,
                    r.version,
                    r.node ?? '',
                    r.state,
                    `${r.instances.total} ${r.instances.busy}/${r.instances.idle}/${r.instances.loading}`,
                    r.queueDepth,
                    r.pending,
                    r.reqPerS ?? '…',
                    r.meanMs ?? '',
                    r.p99Ms ?? '',
                  ]),
                ),
          );
        }
        if (o.once) return;
        await new Promise((res) => setTimeout(res, o.interval));
      }
    });
}
