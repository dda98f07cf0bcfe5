/**
 * The GPU kit's node: `platform/entry/main.ts` as one bundled module (kit/dist/node/main.mjs) that runs
 * with no node_modules but the kit's own two native-bound packages. It names the prebuilt runner and
 * hook-worker entries (the kit carries no esbuild to bundle them at start) before the node loads.
 * Layout (test/gpu/kit.ts builds it): this file two folders under the kit's root, so the paths the
 * node finds beside its own modules — ../../node_modules, ../../console/dist, ./proto — land in it.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
process.env.HEARTH_RUNNER_ENTRY ??= join(root, 'node_modules', '.hearth', 'runner.mjs');
process.env.HEARTH_HOOK_WORKER ??= join(root, 'node_modules', '.hearth', 'hook-worker.mjs');

await import('../../platform/entry/main.js');
