import type { Command } from 'commander';
import { Option } from 'commander';

import type { JobInfo } from '../../client.js';
import type { CliContext } from '../context.js';
import { jobsTable, jobText } from '../format.js';

/** `hearth jobs [id]`: one job, or a listing of yours (an admin key: everyone's), newest first. */
export function register(program: Command, { client, print, integer }: CliContext): void {
  program
    .command('jobs [id]')
    .description('async invocations: one by id (status, result or error), or a list, newest first')
    .option('--wait', 'with an id: wait until it finishes')
    .addOption(
      new Option('--status <status>', 'list only jobs in this state').choices([
        'queued',
        'running',
        'succeeded',
        'failed',
      ]),
    )
    .option('--function <name>', "list only this function's jobs")
    .option('--limit <n>', 'jobs to list (1-200, default 50)', integer('--limit'))
    .option('--before <cursor>', "go on from a listing's `next`")
    .addHelpText(
      'after',
      '\nExamples:\n  hearth jobs\n  hearth jobs --status failed --function tabular-mlp\n  hearth jobs 3f2b… --wait',
    )
    .action(
      async (
        id: string | undefined,
        o: { wait?: boolean; status?: JobInfo['status']; function?: string; limit?: number; before?: string },
      ) => {
        if (id) {
          const job = o.wait ? await client().waitForJob(id) : await client().job(id);
          return print(job, () => jobText(job));
        }
        const list = await client().jobs({ status: o.status, function: o.function, limit: o.limit, before: o.before });
        print(list, () => jobsTable(list.jobs) + (list.next ? `\nmore: hearth jobs --before ${list.next}` : ''));
      },
    );
}
