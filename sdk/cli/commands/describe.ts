import type { Command } from 'commander';

import { canaryText, type FunctionInfo } from '../../api/index.js';
import type { CliContext } from '../context.js';
import { poolsTable, printable, trafficText, versionsTable } from '../format.js';

/** `hearth describe` */
export function register(program: Command, { client, print }: CliContext): void {
  program
    .command('describe <name>')
    .description('a function: versions, traffic, pools')
    .action(async (name: string) => {
      const info = await client().describe(name);
      print(info, () =>
        [
          `${info.name} (created ${info.createdAt}), traffic ${trafficText(info.traffic)}`,
          ...(info.canary ? [printable(canaryText(info.canary))] : []),
          versionsTable(info),
          ...threadLines(info),
          info.pools.length ? poolsTable(info.pools) : 'no pool on this node (cold: the next call loads it)',
        ].join('\n'),
      );
    });
}

/**
 * How the versions that take traffic share the answering node's cores: intra-op threads per forward
 * × the instances that may run at once, what a lone request is lent, and a warning past the cores.
 */
export function threadLines(info: FunctionInfo): string[] {
  const plans = Object.entries(info.threads ?? {}).filter(([v]) => (info.traffic[v] ?? 0) > 0);
  return plans.flatMap(([v, p]) => [
    `threads (this node, ${p.cores} core${p.cores === 1 ? '' : 's'}): v${v} ${p.threadsPerInstance} intra-op thread${p.threadsPerInstance === 1 ? '' : 's'} × up to ${p.instances} instance${p.instances === 1 ? '' : 's'}${p.lentWhenAlone ? `; a lone request's forward is lent all ${p.cores}` : ''}`,
    ...(p.warning ? [`warning: ${printable(p.warning)}`] : []),
  ]);
}
