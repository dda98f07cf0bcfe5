/**
 * Ends the run with one plain line, `vitest: N passed, N failed, N skipped`, after vitest's own
 * summary, so that whatever reads a run's last lines (CI) sees what ran without parsing colours.
 */
import type { Reporter, TestModule } from 'vitest/node';

export default class ClosingLineReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const counts = { passed: 0, failed: 0, skipped: 0, pending: 0 };
    for (const module of modules) for (const test of module.children.allTests()) counts[test.result().state]++;
    // A module that failed to load has no tests to count: it counts as one failure.
    for (const module of modules)
      if (module.state() === 'failed' && [...module.children.allTests()].length === 0) counts.failed++;
    process.stdout.write(
      `\nvitest: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped + counts.pending} skipped\n`,
    );
  }
}
