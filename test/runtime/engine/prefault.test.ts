import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { prefault } from '../../../runtime/engine/index.js';
import { modelPath, REPO_ROOT } from '../../helpers/fixtures.js';

/** A new process loading ResNet-50: the page faults of its load. */
function loadFaults(prefaultMiB: number): { faults: number; weightBytes: number } {
  const out = execFileSync(
    process.execPath,
    [
      '--import',
      'tsx',
      join(REPO_ROOT, 'test', 'runtime', 'engine', 'workers', 'load-faults.ts'),
      modelPath('resnet50'),
      String(prefaultMiB),
    ],
    { cwd: REPO_ROOT, encoding: 'utf8' },
  );
  return JSON.parse(out.trim().split('\n').pop()!) as { faults: number; weightBytes: number };
}

describe('prefault: a spare runner maps the heap its first load will use', () => {
  it("takes most of the page faults out of a new process's first load", () => {
    const cold = loadFaults(0);
    const prefaulted = loadFaults(256);
    // Without it, each 4 KiB page of the weights is a fault of its own.
    expect(cold.faults).toBeGreaterThan((cold.weightBytes / 4096) * 0.5);
    expect(prefaulted.faults).toBeLessThan(cold.faults * 0.2);
  });

  it('refuses a size that is not a number of bytes', () => {
    expect(() => prefault(-1)).toThrow(/bytes/);
  });
});
