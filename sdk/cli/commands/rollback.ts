import type { Command } from 'commander';

import type { CliContext } from '../context.js';
import { trafficText } from '../format.js';

/** `hearth rollback` */
export function register(program: Command, { client, print }: CliContext): void {
  program
    .command('rollback <name>')
    .description('go back to the traffic split before the last change (a second rollback undoes the first)')
    .addHelpText(
      'after',
      '\nAfter a deploy, the version that served before it gets all traffic again; after\n`hearth traffic`, the split before it.\n\nExamples:\n  hearth rollback tabular-mlp',
    )
    .action(async (name: string) => {
      const r = await client().rollback(name);
      print(r, () => `${name}: ${trafficText(r.from)} → ${trafficText(r.traffic)}`);
    });
}
