/**
 * `npm run test:gpu` here: runs the GPU tier (node:test) where a CUDA device is visible, and says
 * plainly that it did not run where none is, rather than printing a run of skipped tests.
 */
import { spawnSync } from 'node:child_process';

import { devices } from '../../runtime/engine/index.js';

if (!devices().cudaAvailable) {
  console.log('test/gpu: no CUDA device visible here; the GPU tier runs on a GPU machine (test/gpu/run.sh)');
  process.exit(0);
}
const run = spawnSync(process.execPath, ['--import', 'tsx', '--test', 'test/gpu/engine.gpu.ts'], { stdio: 'inherit' });
process.exit(run.status ?? 1);
