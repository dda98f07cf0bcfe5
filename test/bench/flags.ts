/** What the serving benchmarks share on their command line and in their output. */
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { REPO_ROOT } from '../helpers/fixtures.js';

/**
 * --quick (2 s cells), --seconds S (5 by default), --out FILE (test/bench/results/`name`.json),
 * --only A,B (the cells whose label contains A or B, where a benchmark labels its cells).
 */
export function benchFlags(name: string): { seconds: number; out: string; quick: boolean; only?: string[] } {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      seconds: { type: 'string' },
      only: { type: 'string' },
      out: { type: 'string', default: join(REPO_ROOT, 'test', 'bench', 'results', `${name}.json`) },
    },
  });
  return {
    quick: values.quick,
    out: values.out,
    seconds: Number(values.seconds ?? (values.quick ? 2 : 5)),
    ...(values.only ? { only: values.only.split(',') } : {}),
  };
}

export const round = (v: number, d = 1): number => Math.round(v * 10 ** d) / 10 ** d;

/** The middle value (the upper of the two middle ones for an even count). */
export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
