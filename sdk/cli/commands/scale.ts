import { type Command, CommanderError } from 'commander';

import type { CliContext } from '../context.js';

/** `hearth scale` */
export function register(program: Command, { client, print, integer }: CliContext): void {
  program
    .command('scale <name>')
    .description('change scaling in place, of the versions taking traffic (or --version); the split stays')
    .option('--min <n>', 'minInstances (0 scales to zero when idle)', integer('--min'))
    .option('--max <n>', 'maxInstances', integer('--max'))
    .option('--target <n>', 'targetQueueDepth: queued plus running requests per instance', integer('--target'))
    .option('--idle <s>', 'scaleDownAfterS: seconds with no request before scaling to --min', integer('--idle'))
    .option('--version <n>', 'one version only (default: every version taking traffic)', integer('--version'))
    .addHelpText(
      'after',
      '\nExamples:\n  hearth scale tabular-mlp --min 1 --max 8\n  hearth scale tabular-mlp --version 2 --min 0',
    )
    .action(
      async (name: string, o: { min?: number; max?: number; target?: number; idle?: number; version?: number }) => {
        if (o.min === undefined && o.max === undefined && o.target === undefined && o.idle === undefined)
          throw new CommanderError(2, 'hearth.usage', 'give --min, --max, --target or --idle');
        const r = await client().scale(
          name,
          {
            ...(o.min === undefined ? {} : { minInstances: o.min }),
            ...(o.max === undefined ? {} : { maxInstances: o.max }),
            ...(o.target === undefined ? {} : { targetQueueDepth: o.target }),
            ...(o.idle === undefined ? {} : { scaleDownAfterS: o.idle }),
          },
          o.version,
        );
        print(r, () =>
          r.versions
            .map(
              (v) =>
                `${name} v${v.version}: min ${v.scaling.minInstances}, max ${v.scaling.maxInstances}, target ${v.scaling.targetQueueDepth}, idle ${v.scaling.scaleDownAfterS}s`,
            )
            .join('\n'),
        );
      },
    );
}
