import { availableParallelism } from 'node:os';

import { defineConfig } from 'vitest/config';

/**
 * Integration files `npm run test:quick` runs beside the unit tests: a smoke of each transport
 * (function URLs and KServe over HTTP, gRPC, the SDK client, the CLI's offline verbs).
 */
/**
 * Files that measure their own process (its RSS) run each in a fresh one: in a shared worker, memory
 * an earlier file freed is handed by malloc to the load being measured (a CI run saw a control load
 * of ResNet-50 add 0 MiB).
 */
const ALONE = ['test/runtime/engine/memory.test.ts'];

const QUICK = [
  'test/platform/http/front-door.test.ts',
  'test/platform/grpc/grpc.test.ts',
  'test/platform/triton/protocol.test.ts',
  'test/sdk/client.test.ts',
];

// Unit tests beside their sources, integration tests under test/ against real LibTorch, Redis and
// S3. The GPU tier (test/gpu) runs on node:test so it can travel to a GPU machine without
// node_modules: `npm run test:gpu`, skipped where no CUDA device exists.
//
// Files run side by side, one more than the cores: most integration files wait on child
// processes (nodes, runners, the CLI, python3-torch) more than they compute. Files share their
// worker's module graph (isolate: false) — importing the platform cost ~1.7 s of CPU per file,
// a quarter of the suite's — so a file must leave no state behind: it closes what it starts and
// restores the environment it changes.
export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: Math.min(4, availableParallelism() + 1),
    isolate: false,
    reporters: ['default', './test/helpers/closing-line-reporter.ts'],
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['sdk/**/*.test.ts', 'runtime/**/*.test.ts', 'platform/**/*.test.ts', 'tools/**/*.test.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: process.env.HEARTH_TEST_QUICK ? QUICK : ['test/**/*.test.ts'],
          exclude: ['test/gpu/**', ...ALONE],
          globalSetup: ['test/helpers/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration-alone',
          include: process.env.HEARTH_TEST_QUICK ? [] : ALONE,
          isolate: true,
          // The integration project's global setup (models, Redis, the reference server) serves these too.
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
