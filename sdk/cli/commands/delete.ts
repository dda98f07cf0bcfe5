import type { Command } from 'commander';

import type { CliContext } from '../context.js';

/** `hearth delete` */
export function register(program: Command, { client, print }: CliContext): void {
  program
    .command('delete <name>')
    .description('delete a function, its versions and pools')
    .action(async (name: string) => {
      await client().delete(name);
      print({ deleted: name }, () => `deleted ${name}`);
    });
}
