import type { Command } from 'commander';

import { canaryText } from '../../api/index.js';
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
          info.pools.length ? poolsTable(info.pools) : 'no pool on this node (cold: the next call loads it)',
        ].join('\n'),
      );
    });
}
