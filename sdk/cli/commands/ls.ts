import type { Command } from 'commander';

import type { CliContext } from '../context.js';
import { table, trafficText } from '../format.js';

/** `hearth ls` */
export function register(program: Command, { client, print }: CliContext): void {
  program
    .command('ls')
    .description('list functions')
    .action(async () => {
      const fns = await client().list();
      print(fns, () =>
        fns.length === 0
          ? 'no functions yet: hearth init, then hearth deploy'
          : table(
              ['name', 'versions', 'latest', 'traffic', 'created'],
              fns.map((f) => [f.name, f.versions, f.latest ?? '', trafficText(f.traffic), f.createdAt]),
            ),
      );
    });
}
