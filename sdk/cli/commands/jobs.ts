import type { Command } from 'commander';

import type { CliContext } from '../context.js';
import { jobText } from '../format.js';

/** `hearth jobs` */
export function register(program: Command, { client, print }: CliContext): void {
  program
    .command('jobs <id>')
    .description('an async invocation: status, result or error')
    .option('--wait', 'wait until it finishes')
    .action(async (id: string, o: { wait?: boolean }) => {
      const job = o.wait ? await client().waitForJob(id) : await client().job(id);
      print(job, () => jobText(job));
    });
}
