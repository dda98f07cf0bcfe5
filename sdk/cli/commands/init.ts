import type { Command } from 'commander';

import type { CliContext } from '../context.js';
import { initFunction } from '../init.js';

/** `hearth init` */
export function register(program: Command, { print }: CliContext): void {
  program
    .command('init <dir>')
    .description('scaffold a function (hearth.yaml, hook.ts, export.py, README) that deploys as it is')
    .option('--name <name>', 'the function name (default: the folder name)')
    .option('--template <kind>', 'json (a small MLP, JSON in and out) or image (a ResNet-18 image classifier)', 'json')
    .option(
      '--python <path>',
      'the Python (with PyTorch) that runs export.py (default: HEARTH_PYTHON, python3, /usr/bin/python3)',
    )
    .action(async (dir: string, o: { name?: string; python?: string; template?: string }) => {
      const r = await initFunction(dir, o);
      print(r, () =>
        [
          `created ${dir}: ${r.files.join(', ')}`,
          ...(r.python ? [`model.pt made by ${r.python} export.py${r.note ? ` (${r.note})` : ''}`] : []),
          r.hint ?? `next: hearth deploy ${dir}`,
        ].join('\n'),
      );
    });
}
