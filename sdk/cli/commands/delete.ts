import { createInterface } from 'node:readline/promises';

import { type Command, CommanderError } from 'commander';

import type { CliContext } from '../context.js';

/** Asks on the terminal; false for anything but y or yes. */
async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

/** `hearth delete` */
export function register(program: Command, { client, print }: CliContext): void {
  program
    .command('delete <name>')
    .description('delete a function, its versions and pools (asks first, unless --yes)')
    .option('-y, --yes', 'do not ask')
    .addHelpText('after', '\nExamples:\n  hearth delete my-model\n  hearth delete my-model --yes   # in scripts')
    .action(async (name: string, o: { yes?: boolean }) => {
      if (!o.yes) {
        if (!process.stdin.isTTY)
          throw new CommanderError(
            2,
            'hearth.usage',
            `deleting ${name} removes all its versions: add --yes to confirm (there is no terminal to ask on)`,
          );
        if (!(await confirm(`Delete ${name} and all its versions? [y/N] `))) {
          console.error('not deleted');
          process.exitCode = 1;
          return;
        }
      }
      await client().delete(name);
      print({ deleted: name }, () => `deleted ${name}`);
    });
}
