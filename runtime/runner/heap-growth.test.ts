import { spawnSync } from 'node:child_process';

import { describe, expect, it } from 'vitest';

import { HEAP_GROWTH_FLAG } from './heap-growth.js';

/** What V8 says on stderr when this Node sets `flag` at run time (it names a flag it does not know). */
function setIn(flag: string): string {
  const run = spawnSync(
    process.execPath,
    ['-e', 'require("node:v8").setFlagsFromString(process.argv[1])', '--', flag],
    {
      encoding: 'utf8',
      timeout: 30_000,
    },
  );
  expect(run.status).toBe(0);
  return run.stderr;
}

// What the flag does to a loaded node is bench:ceiling's to show (docs/benchmarks.md): V8 gives
// no way to read a flag back, and its collections follow heuristics a small program does not meet.
describe('the heap growth flag', () => {
  it('is one this Node knows: a Node that dropped it would refuse it here, not in every process', () => {
    expect(setIn('--no-such-heap-flag')).toMatch(/unrecognized flag/);
    expect(setIn(HEAP_GROWTH_FLAG)).toBe('');
  });
});
