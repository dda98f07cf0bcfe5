import type { Command } from 'commander';

import type { CliContext } from '../context.js';
import { versionsTable } from '../format.js';

/** `hearth versions` */
export function register(program: Command, { client, print }: CliContext): void {
  program
    .command('versions <name>')
    .description("a function's versions")
    .action(async (name: string) => {
      const info = await client().describe(name);
      print(
        info.versions.map((v) => ({
          version: v.version,
          status: v.status,
          traffic: info.traffic[v.version] ?? 0,
          createdAt: v.createdAt,
          reason: v.reason,
        })),
        () => versionsTable(info),
      );
    });
}
