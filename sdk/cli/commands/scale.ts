import { type Command, CommanderError } from 'commander';

import type { CliContext } from '../context.js';
import { HearthError } from '../../errors.js';
import { mainVersion } from '../format.js';

/** `hearth scale` */
export function register(program: Command, { client, print, integer }: CliContext): void {
  program
    .command('scale <name>')
    .description('change the scaling of the serving version (a new version, same artifacts, traffic moves to it)')
    .option('--min <n>', 'minInstances (0 scales to zero when idle)', integer('--min'))
    .option('--max <n>', 'maxInstances', integer('--max'))
    .option('--target <n>', 'targetQueueDepth: queued plus running requests per instance', integer('--target'))
    .action(async (name: string, o: { min?: number; max?: number; target?: number }) => {
      if (o.min === undefined && o.max === undefined && o.target === undefined)
        throw new CommanderError(2, 'hearth.usage', 'give --min, --max or --target');
      const hearth = client();
      const info = await hearth.describe(name);
      const serving = info.versions.find((v) => v.version === mainVersion(info));
      if (!serving) throw new HearthError(`${name} has no version serving traffic`);
      const scaling = {
        ...(serving.spec.scaling as Record<string, number>),
        ...(o.min === undefined ? {} : { minInstances: o.min }),
        ...(o.max === undefined ? {} : { maxInstances: o.max }),
        ...(o.target === undefined ? {} : { targetQueueDepth: o.target }),
      };
      const r = await hearth.deploy({ ...serving.spec, scaling }, serving.artifacts);
      if (r.status === 'failed') throw new HearthError(`${name} v${r.version} failed to load: ${r.reason}`);
      print(
        { ...r, scaling },
        () => `${name} v${r.version} (from v${serving.version}): scaling ${JSON.stringify(scaling)}`,
      );
    });
}
