import { type Command, CommanderError } from 'commander';

import type { CliContext } from '../context.js';
import { trafficText } from '../format.js';

/** `hearth traffic` */
export function register(program: Command, { client, print }: CliContext): void {
  program
    .command('traffic <name> <weights...>')
    .description('set the traffic split, e.g. hearth traffic resnet 2=90 3=10')
    .action(async (name: string, weights: string[]) => {
      const traffic: Record<string, number> = {};
      for (const w of weights) {
        const m = /^(\d+)=(\d+(?:\.\d+)?)$/.exec(w);
        if (!m) throw new CommanderError(2, 'hearth.usage', `"${w}" is not VERSION=WEIGHT (e.g. 2=90)`);
        traffic[m[1]!] = Number(m[2]);
      }
      const r = await client().setTraffic(name, traffic);
      print(r, () => `${r.name}: ${trafficText(r.traffic)}`);
    });
}
