import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';

import { SingleBar } from 'cli-progress';
import { type Command, CommanderError } from 'commander';

import type { MapOutcome } from '../../client.js';
import type { CliContext } from '../context.js';

/**
 * One input per non-empty line, each JSON; a line that is not is a usage error naming it. `lines`
 * holds each input's line number in the file (1-based: blank lines are skipped, so input i is not
 * always line i + 1), what a failure is reported by.
 */
export function parseJsonLines(text: string, file: string): { inputs: unknown[]; lines: number[] } {
  const inputs: unknown[] = [];
  const lines: number[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      inputs.push(JSON.parse(line));
      lines.push(i + 1);
    } catch (error) {
      throw new CommanderError(2, 'hearth.usage', `${file}:${i + 1} is not JSON: ${(error as Error).message}`);
    }
  });
  return { inputs, lines };
}

/** An outcome as its JSONL line: {"index", "output"} or {"index", "error": {"code", "message"}}. */
export function outcomeLine(o: MapOutcome): string {
  return JSON.stringify(o.ok ? { index: o.index, output: o.output } : { index: o.index, error: o.error });
}

/** `hearth map` */
export function register(program: Command, { client, json, integer }: CliContext): void {
  program
    .command('map <name> <inputs>')
    .description('call a function on every line of a JSONL file, as async jobs; results in input order as JSONL')
    .option('-o, --out <file>', 'write the results here (default: stdout)')
    .option('-c, --concurrency <n>', 'jobs in flight at once (default 16)', integer('--concurrency'))
    .option('--version <n>', 'a version instead of the traffic split', integer('--version'))
    .option(
      '--key <prefix>',
      "idempotency key prefix (default: from the function, its traffic split and the file's bytes: the same command resumes)",
    )
    .addHelpText(
      'after',
      '\nEach result line is {"index": i, "output": ...} or {"index": i, "error": {"code", "message"}}.\nRun the same command again after an interruption: inputs already done are not redone.\n\nExamples:\n  hearth map tabular-mlp inputs.jsonl --out results.jsonl\n  hearth map tabular-mlp inputs.jsonl -c 64 > results.jsonl',
    )
    .action(
      async (name: string, file: string, o: { out?: string; concurrency?: number; version?: number; key?: string }) => {
        const text = await readFile(file, 'utf8');
        const { inputs, lines: lineOf } = parseJsonLines(text, file);
        if (inputs.length === 0) throw new CommanderError(2, 'hearth.usage', `${file} has no inputs (one JSON a line)`);
        // The same command resumes; after a deploy or a traffic change (another model answers) it runs anew.
        const hearth = client();
        const serving = o.version ?? JSON.stringify((await hearth.describe(name)).traffic);
        const key =
          o.key ??
          `map-${createHash('sha256').update(`${name}\0${serving}\0`).update(text).digest('hex').slice(0, 24)}`;
        const bar =
          process.stderr.isTTY && !json()
            ? new SingleBar({
                format: `${name} [{bar}] {value}/{total} | {failed} failed | {eta_formatted} left`,
                hideCursor: true,
              })
            : undefined;
        let failed = 0;
        bar?.start(inputs.length, 0, { failed });
        const outcomes = await hearth.map(name, inputs, {
          concurrency: o.concurrency,
          version: o.version,
          keyPrefix: key,
          onSettled: (outcome) => {
            if (!outcome.ok) failed++;
            bar?.increment(1, { failed });
          },
        });
        bar?.stop();
        const lines = `${outcomes.map(outcomeLine).join('\n')}\n`;
        if (o.out) await writeFile(o.out, lines);
        else process.stdout.write(lines);
        const failures = outcomes.filter((x) => !x.ok);
        process.stderr.write(
          `${name}: ${outcomes.length - failures.length} of ${outcomes.length} succeeded${o.out ? ` → ${o.out}` : ''}\n`,
        );
        for (const f of failures.slice(0, 20))
          if (!f.ok)
            process.stderr.write(
              `  ${file}:${lineOf[f.index]} (index ${f.index}): ${f.error.message} (${f.error.code})\n`,
            );
        if (failures.length > 20) process.stderr.write(`  … and ${failures.length - 20} more\n`);
        if (failures.length > 0) process.exitCode = 1;
      },
    );
}
