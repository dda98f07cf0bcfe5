import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { type Command, CommanderError } from 'commander';

import type { CliContext } from '../context.js';

/**
 * The Hearth checkout whose node `hearth dev` runs: this one when the CLI runs from source, else
 * HEARTH_HOME (the packaged CLI carries no node: LibTorch and the addon are the checkout's).
 */
function hearthHome(): string | undefined {
  const here = import.meta.url.endsWith('.ts') ? fileURLToPath(new URL('../../..', import.meta.url)) : undefined;
  const home = process.env.HEARTH_HOME ?? here;
  return home && existsSync(join(home, 'platform', 'entry', 'dev-main.ts')) ? home : undefined;
}

/** `hearth dev` */
export function register(program: Command, { integer }: CliContext): void {
  program
    .command('dev [folder]')
    .description('run a function on a local node of its own; redeploy when hook.ts, model.pt or hearth.yaml change')
    .option('--port <n>', 'HTTP port of the local node (default 8000; 0: any free port)', integer('--port'))
    .option('--host <host>', 'address to listen on (default 127.0.0.1)')
    .option('--no-typecheck', "reload the hook without type-checking it against the SDK's declarations")
    .addHelpText(
      'after',
      "\nIt prints the function's URL and every line of its log (the hook's console, errors with request\nids, lifecycle); a change in the folder rebundles the hook and reloads the model.\n\nExamples:\n  hearth dev                # the function in this folder\n  hearth dev my-model --port 8080",
    )
    .action(async (folder: string | undefined, o: { port?: number; host?: string; typecheck: boolean }) => {
      const home = hearthHome();
      if (!home)
        throw new CommanderError(
          2,
          'hearth.usage',
          'hearth dev runs a node, which needs a Hearth checkout (LibTorch and the native addon): run it there (npx hearth dev) or set HEARTH_HOME to one',
        );
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          join(home, 'platform', 'entry', 'dev-main.ts'),
          resolve(folder ?? '.'),
          ...(o.port === undefined ? [] : ['--port', String(o.port)]),
          ...(o.host === undefined ? [] : ['--host', o.host]),
          ...(o.typecheck ? [] : ['--no-typecheck']),
        ],
        { cwd: home, stdio: 'inherit' },
      );
      // Ctrl-C reaches the child from the terminal; a signal sent to this process alone is passed on.
      for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
      const code = await new Promise<number>((done) => child.once('exit', (c) => done(c ?? 1)));
      process.exitCode = code;
    });
}
