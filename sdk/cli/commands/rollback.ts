import type { Command } from 'commander';

import type { CliContext } from '../context.js';
import { HearthError } from '../../errors.js';
import { mainVersion, trafficText } from '../format.js';

/** `hearth rollback` */
export function register(program: Command, { client, print }: CliContext): void {
  program
    .command('rollback <name>')
    .description('send all traffic to the ready version before the one now serving')
    .action(async (name: string) => {
      const hearth = client();
      const info = await hearth.describe(name);
      const current = mainVersion(info);
      const previous = info.versions
        .filter((v) => v.status === 'ready' && current !== undefined && v.version < current)
        .at(-1);
      if (!previous) throw new HearthError(`${name} has no ready version before v${current ?? '?'} to roll back to`);
      const r = await hearth.setTraffic(name, { [previous.version]: 100 });
      print(
        { ...r, from: current, to: previous.version },
        () => `${name}: v${current} → v${previous.version} (${trafficText(r.traffic)})`,
      );
    });
}
