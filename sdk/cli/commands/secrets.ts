import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';

import { type Command, CommanderError } from 'commander';

import type { CliContext } from '../context.js';

/** Reads one line on the terminal without echoing it. */
function askHidden(question: string): Promise<string> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
    process.stderr.write(question);
    (rl as unknown as { _writeToOutput: (s: string) => void })._writeToOutput = () => undefined;
    rl.once('line', (line) => {
      rl.close();
      process.stderr.write('\n');
      resolve(line);
    });
  });
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  // One trailing newline (echo, a heredoc) is not part of the value.
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** `hearth secrets set|ls|rm` */
export function register(program: Command, { client, print }: CliContext): void {
  const secrets = program
    .command('secrets')
    .description('secrets on the node, for the hooks of functions whose spec lists them (ctx.secrets.NAME)')
    .addHelpText(
      'after',
      '\nExamples:\n  hearth secrets set HF_TOKEN                  # asks (or reads stdin: echo "$TOKEN" | hearth secrets set HF_TOKEN)\n  hearth secrets set DB_URL --from-file db.txt\n  hearth secrets ls\n  hearth secrets rm HF_TOKEN\n\nThen list it in hearth.yaml (secrets: [HF_TOKEN]) and read ctx.secrets.HF_TOKEN in the hook.',
    );
  secrets
    .command('set <name>')
    .description('set a secret: from --from-file, --value, stdin, or asked on the terminal')
    .option('--from-file <file>', 'the value is this file')
    .option('--value <value>', 'the value (it stays in your shell history: prefer stdin or the prompt)')
    .action(async (name: string, o: { fromFile?: string; value?: string }) => {
      const value =
        o.fromFile !== undefined
          ? await readFile(o.fromFile, 'utf8')
          : o.value !== undefined
            ? o.value
            : process.stdin.isTTY
              ? await askHidden(`value of ${name}: `)
              : await readStdin();
      if (value === '') throw new CommanderError(2, 'hearth.usage', `the value of ${name} is empty`);
      const r = await client().setSecret(name, value);
      print(r, () => `set ${r.name}`);
    });
  secrets
    .command('ls')
    .description('the secrets: names and when each was set (never values)')
    .action(async () => {
      const list = await client().secrets();
      print(list, () =>
        list.length ? list.map((s) => `${s.name.padEnd(32)} ${s.updatedAt}`).join('\n') : 'no secrets',
      );
    });
  secrets
    .command('rm <name>')
    .description('remove a secret (functions that list it fail their next load until it is set again)')
    .action(async (name: string) => {
      const deleted = await client().deleteSecret(name);
      print({ name, deleted }, () => (deleted ? `removed ${name}` : `no secret ${name}`));
    });
}
