/**
 * `npm start`'s node, built by tools/build-node.ts into dist/node/main.mjs: ./main.ts as one module,
 * which starts in a third of the time tsx takes to load the node's sources (its modules: ~0.35 s
 * against ~1.3 s here), with the runner's and the hook worker's entries prebuilt beside the
 * packages (node_modules/.hearth/, which the runners may read) rather than bundled at the first
 * runner's start. Layout: this file two folders under the repository's root, so the paths the
 * node finds beside its own modules (../../native, ../../node_modules, ../../console/dist, ./proto)
 * resolve as they do from the sources.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
process.env.HEARTH_RUNNER_ENTRY ??= join(root, 'node_modules', '.hearth', 'runner.mjs');
process.env.HEARTH_HOOK_WORKER ??= join(root, 'node_modules', '.hearth', 'hook-worker.mjs');

await import('./main.js');
