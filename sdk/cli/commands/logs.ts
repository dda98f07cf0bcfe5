import { type Command, CommanderError } from 'commander';

import type { FunctionLogEntry } from '../../api/index.js';
import type { CliContext } from '../context.js';
import { durationMs } from '../context.js';
import { printable } from '../format.js';

/** One entry as a line: time, version, source, level, message, request id. */
export function logLine(e: FunctionLogEntry): string {
  const time = new Date(e.at).toISOString().slice(11, 23);
  const version = e.version === undefined ? '  ' : `v${e.version}`;
  const id = e.requestId ? `  [${e.requestId}]` : '';
  return `${time} ${version} ${e.source.padEnd(9)} ${e.level.padEnd(5)} ${printable(e.msg)}${id}`;
}

/** `--since`: a duration back from now (`90s`, `10m`, `2h`, `1d`) or a time (`2026-12-01T10:00:00Z`), as ms since the epoch. */
export function parseSince(text: string, now = Date.now()): number {
  const back = durationMs(text);
  if (back !== undefined) return now - back;
  const at = Date.parse(text);
  if (Number.isNaN(at))
    throw new CommanderError(
      2,
      'hearth.usage',
      `--since ${text}: give a duration (90s, 10m, 2h, 1d) or a time (2026-12-01T10:00:00Z)`,
    );
  return at;
}

/** `hearth logs` */
export function register(program: Command, { client, json, integer }: CliContext): void {
  program
    .command('logs <name>')
    .description("a function's own log: its hook's console, runner lines, lifecycle, errors with request ids")
    .option('--version <n>', 'one version only', integer('--version'))
    .option('--limit <n>', 'entries to show first (1-1000, default 200)', integer('--limit'))
    .option('-f, --follow', 'keep printing new entries (Ctrl-C stops)')
    .option('--errors', 'failed calls only (hook, model, deadline, runner): each with its request id, phase and stack')
    .option('--since <when>', 'entries from then on: a duration back (90s, 10m, 2h, 1d) or a time', (v) =>
      parseSince(v),
    )
    .addHelpText(
      'after',
      '\nExamples:\n  hearth logs tabular-mlp\n  hearth logs tabular-mlp --since 10m\n  hearth logs tabular-mlp --version 2 --follow\n  hearth logs tabular-mlp --errors --since 1h',
    )
    .action(
      async (
        name: string,
        o: { version?: number; limit?: number; follow?: boolean; since?: number; errors?: boolean },
      ) => {
        const print = (e: FunctionLogEntry) => console.log(json() ? JSON.stringify(e) : logLine(e));
        const level = o.errors ? ('error' as const) : undefined;
        if (!o.follow) {
          for (const e of await client().logs(name, { version: o.version, limit: o.limit, since: o.since, level }))
            print(e);
          return;
        }
        const stop = new AbortController();
        process.once('SIGINT', () => stop.abort());
        for await (const e of client().followLogs(name, {
          version: o.version,
          limit: o.limit,
          since: o.since,
          level,
          signal: stop.signal,
        }))
          print(e);
      },
    );
}
