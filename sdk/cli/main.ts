/**
 * `hearth`: the CLI over the typed client (../client.ts). Tables for people, `--json` for programs
 * on every command that reads; exit codes 0 (ok), 1 (the call failed), 2 (usage).
 */
import { Command, CommanderError } from 'commander';

import { Hearth } from '../client.js';
import { HearthError } from '../errors.js';
import { register as benchVerb } from './commands/bench.js';
import { register as deleteVerb } from './commands/delete.js';
import { register as deployVerb } from './commands/deploy.js';
import { register as describeVerb } from './commands/describe.js';
import { register as devVerb } from './commands/dev.js';
import { register as initVerb } from './commands/init.js';
import { register as invokeVerb } from './commands/invoke.js';
import { register as jobsVerb } from './commands/jobs.js';
import { register as logsVerb } from './commands/logs.js';
import { register as lsVerb } from './commands/ls.js';
import { register as mapVerb } from './commands/map.js';
import { register as rollbackVerb } from './commands/rollback.js';
import { register as scaleVerb } from './commands/scale.js';
import { register as secretsVerb } from './commands/secrets.js';
import { register as topVerb } from './commands/top.js';
import { register as trafficVerb } from './commands/traffic.js';
import { register as versionsVerb } from './commands/versions.js';
import type { CliContext } from './context.js';

/** The CLI's version (the repository's package version). */
const CLI_VERSION = '0.1.0';

import { integer } from './context.js';

const program = new Command('hearth')
  .description('Deploy and call PyTorch model functions on a Hearth node')
  .option('--url <url>', 'the node (default: HEARTH_URL or http://127.0.0.1:8000)')
  .option('--api-key <key>', 'an API key (default: HEARTH_API_KEY)')
  .option('--ca-file <file>', 'a CA (PEM) to trust for an https node (default: HEARTH_CA_FILE)')
  .option('--cert <file>', 'client certificate (PEM) for mutual TLS (default: HEARTH_CLIENT_CERT)')
  .option('--key <file>', 'client key (PEM) for mutual TLS (default: HEARTH_CLIENT_KEY)')
  .option('--json', 'print JSON instead of tables')
  .showHelpAfterError()
  // Each verb's help lists --url, --api-key and the rest too.
  .configureHelp({ showGlobalOptions: true })
  .exitOverride();

const context: CliContext = {
  client: () => {
    const o = program.opts();
    return new Hearth({ url: o.url, apiKey: o.apiKey, caFile: o.caFile, certFile: o.cert, keyFile: o.key });
  },
  json: () => Boolean(program.opts().json),
  print: (value, table) => console.log(context.json() ? JSON.stringify(value, null, 2) : table()),
  integer,
};
for (const register of [
  initVerb,
  deployVerb,
  devVerb,
  invokeVerb,
  mapVerb,
  lsVerb,
  describeVerb,
  versionsVerb,
  trafficVerb,
  rollbackVerb,
  scaleVerb,
  deleteVerb,
  jobsVerb,
  logsVerb,
  secretsVerb,
  topVerb,
  benchVerb,
])
  register(program, context);

/** Whether `--version` (or -V) comes before the verb, global options (and their values) aside. */
function askedForVersion(args: string[]): boolean {
  const takesValue = new Set(
    program.options.filter((o) => o.required || o.optional).flatMap((o) => [o.long, o.short].filter(Boolean)),
  );
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--version' || arg === '-V') return true;
    if (!arg.startsWith('-')) return false;
    if (takesValue.has(arg)) i++;
  }
  return false;
}

/** Examples for the verbs whose own file gives none (`hearth <verb> --help`). */
const EXAMPLES: Record<string, string[]> = {
  init: [
    'hearth init my-model',
    'hearth init my-classifier --template image',
    'hearth init my-model --python /usr/bin/python3',
  ],
  ls: ['hearth ls', 'hearth ls --json'],
  describe: ['hearth describe tabular-mlp', 'hearth describe tabular-mlp --json'],
  versions: ['hearth versions tabular-mlp'],
  traffic: ['hearth traffic tabular-mlp 1=90 2=10   # a canary', 'hearth traffic tabular-mlp 2=100       # promote v2'],
  jobs: ['hearth jobs 0b7f2c1e-…', 'hearth jobs 0b7f2c1e-… --wait --json'],
  top: ['hearth top', 'hearth top --once --json'],
};
for (const command of program.commands) {
  const examples = EXAMPLES[command.name()];
  if (examples) command.addHelpText('after', `\nExamples:\n${examples.map((e) => `  ${e}`).join('\n')}`);
}

// `hearth --version` (or -V) before any verb: a program-wide --version option would take the
// --version of `invoke` and `logs` (a function version) too.
program.addHelpText('after', '\nhearth --version prints the version.');
if (askedForVersion(process.argv.slice(2))) {
  console.log(CLI_VERSION);
  process.exit(0);
}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // --help and --version exit 0; anything else commander refused is a usage error (commander has
    // printed its own message; ours are printed here).
    if (error.exitCode === 0) process.exit(0);
    if (error.code === 'hearth.usage') console.error(`error: ${error.message}`);
    process.exit(2);
  }
  if (error instanceof HearthError) {
    // The node speaks of headers; a CLI user sets a flag or a variable.
    const hint =
      error.code === 'UNAUTHENTICATED'
        ? ' — give an API key with --api-key or HEARTH_API_KEY'
        : error.code === 'PERMISSION_DENIED' && /admin/.test(error.message)
          ? ' — this needs an admin key (--api-key or HEARTH_API_KEY)'
          : '';
    console.error(`error: ${error.message} (${error.code})${hint}`);
    process.exit(1);
  }
  console.error(`error: ${(error as Error).message}`);
  process.exit(1);
}
