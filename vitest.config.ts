import { defineConfig } from 'vitest/config';

// Unit tests beside their sources, integration tests under test/ against real LibTorch (and later
// real Redis and S3). The GPU tier (test/gpu) runs on node:test so it can travel to a GPU machine
// without node_modules: `npm run test:gpu`, skipped where no CUDA device exists.
export default defineConfig({
  test: {
    pool: 'forks',
    reporters: ['default', './test/helpers/closing-line-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['sdk/**/*.test.ts', 'runtime/**/*.test.ts', 'platform/**/*.test.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: ['test/gpu/**'],
          globalSetup: ['test/helpers/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
