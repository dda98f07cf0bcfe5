/**
 * Ends the run with the ten slowest files (import and tests, seconds) and one plain line,
 * `vitest: N passed, N failed, N skipped`, after vitest's own summary, so that whatever reads a
 * run's last lines (CI) sees where the time went and what ran, without parsing colours.
 */
import { relative } from 'node:path';

import type { Reporter, TestModule } from 'vitest/node';

/** A file's own time: importing it (its suite callbacks included) and running its tests and hooks. */
function seconds(module: TestModule): number {
  const d = module.diagnostic();
  return (d.collectDuration + d.duration) / 1000;
}

function slowestFiles(modules: ReadonlyArray<TestModule>, count = 10): string[] {
  return [...modules]
    .map((m) => ({ file: relative(process.cwd(), m.moduleId), s: seconds(m), project: m.project.name }))
    .sort((a, b) => b.s - a.s)
    .slice(0, count)
    .map((f) => `${f.s.toFixed(1).padStart(7)} s  ${f.file}${f.project ? ` (${f.project})` : ''}`);
}

export default class ClosingLineReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const counts = { passed: 0, failed: 0, skipped: 0, pending: 0 };
    for (const module of modules) for (const test of module.children.allTests()) counts[test.result().state]++;
    // A module that failed to load has no tests to count: it counts as one failure.
    for (const module of modules)
      if (module.state() === 'failed' && [...module.children.allTests()].length === 0) counts.failed++;
    const slowest = slowestFiles(modules);
    process.stdout.write(
      `\nslowest ${slowest.length} files (import + tests, each on its own worker):\n${slowest.join('\n')}\n` +
        `\nvitest: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped + counts.pending} skipped\n`,
    );
  }
}
