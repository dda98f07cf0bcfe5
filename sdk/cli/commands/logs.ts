import type { Command } from 'commander';

import type { LogEntryView } from '../../api/index.js';
import type { CliContext } from '../context.js';

/** One entry as a line: time, version, source, level, message, request id. */
export function logLine(e: LogEntryView): string {
  const time = new Date(e.at).toISOString().slice(11, 23);
  const version = e.version === undefined ? '  ' : `v${e.version}`;
  const id = e.requestId ? `  [${e.requestId}]` : '';
  return `${time} ${version} ${e.source.padEnd(9)} ${e.level.padEnd(5)} ${e.msg}${id}`;
}

/** `hearth logs` */
export function register(program: Command, { client, json, integer }: CliContext): void {
  program
    .command('logs <name>')
    .description("a function's own log: its hook's console, runner lines, lifecycle, errors with request ids")
    .option('--version <n>', 'one version only', integer('--version'))
    .option('--limit <n>', 'entries to show first (1-1000, default 200)', integer('--limit'))
    .option('-f, --follow', 'keep printing new entries (Ctrl-C stops)')
    .addHelpText('after', '\nExamples:\n  hearth logs tabular-mlp\n  hearth logs tabular-mlp --version 2 --follow')
    .action(async (name: string, o: { version?: number; limit?: number; follow?: boolean }) => {
      const print = (e: LogEntryView) => console.log(json() ? JSON.stringify(e) : logLine(e));
      if (!o.follow) {
        for (const e of await client().logs(name, { version: o.version, limit: o.limit })) print(e);
        return;
      }
      const stop = new AbortController();
      process.once('SIGINT', () => stop.abort());
      for await (const e of client().followLogs(name, { version: o.version, limit: o.limit, signal: stop.signal }))
        print(e);
    });
}
