/** The `hearth` CLI as a user runs it (the bundled one, HEARTH_CLI), from a folder of the test's. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

import { expect } from 'vitest';

import { HEARTH_CLI, PYTHON } from './fixtures.js';

const run = promisify(execFile);

export interface CliRun {
  code: number;
  out: string;
  err: string;
}

/** `hearth` against the node at a URL, run in `cwd`: its exit code and output (a failure does not throw). */
export function cliIn(cwd: string): {
  hearth(url: string, ...args: string[]): Promise<CliRun>;
  parsed<T>(url: string, ...args: string[]): Promise<T>;
} {
  const hearth = async (url: string, ...args: string[]): Promise<CliRun> => {
    try {
      const { stdout, stderr } = await run(HEARTH_CLI, ['--url', url, ...args], {
        cwd,
        env: { ...process.env, HEARTH_PYTHON: PYTHON },
      });
      return { code: 0, out: stdout, err: stderr };
    } catch (error) {
      const e = error as { code: number; stdout: string; stderr: string };
      return { code: e.code, out: e.stdout, err: e.stderr };
    }
  };
  /** `--json`, exit 0 expected: the answer parsed. */
  const parsed = async <T>(url: string, ...args: string[]): Promise<T> => {
    const r = await hearth(url, '--json', ...args);
    expect(r.code, r.err).toBe(0);
    return JSON.parse(r.out) as T;
  };
  return { hearth, parsed };
}
