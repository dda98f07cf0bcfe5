import { describe, expect, it } from 'vitest';

import type { FunctionInfo, JobInfo } from '../client.js';
import { logLine } from './commands/logs.js';
import { jobText, mainVersion, printable, trafficText, versionsTable } from './format.js';

const info = {
  name: 'f',
  traffic: { 1: 10, 2: 90 },
  versions: [
    { version: 1, status: 'ready', createdAt: '2026-12-01T00:00:00Z' },
    { version: 2, status: 'failed', createdAt: '2026-12-01T00:01:00Z', reason: 'no forward()' },
  ],
} as unknown as FunctionInfo;

describe("the CLI's text for people", () => {
  it('names the version most traffic goes to, and the split', () => {
    expect(mainVersion(info)).toBe(2);
    expect(trafficText(info.traffic)).toBe('v1=10 v2=90');
    expect(trafficText({})).toBe('none');
  });

  it('lists versions with their traffic and the reason one failed', () => {
    const text = versionsTable(info);
    expect(text).toMatch(/2\s.*failed\s.*90\s.*no forward\(\)/);
    expect(text).toMatch(/1\s.*ready\s.*10/);
  });

  it('says how a job ended: its result, or its error and code', () => {
    const done = {
      id: 'j1',
      status: 'completed',
      function: 'f',
      version: 2,
      attempts: 1,
      result: { json: { y: [1] } },
    } as unknown as JobInfo;
    expect(jobText(done)).toContain('job j1: completed (f v2, attempts 1)');
    expect(jobText(done)).toContain('"y"');
    const failed = {
      id: 'j2',
      status: 'failed',
      function: 'f',
      attempts: 3,
      error: { error: 'boom', code: 'INTERNAL' },
    } as unknown as JobInfo;
    expect(jobText(failed)).toContain('error: boom (INTERNAL)');
  });
});

describe('printable: what a function wrote, safe for a terminal', () => {
  it('shows control characters as ? (an ANSI clear-screen, a bell), keeps newlines and text', () => {
    expect(printable('boom\u001b[2J\u001b]0;owned\u0007 done\nat pre (hook.ts:6:94)')).toBe(
      'boom?[2J?]0;owned? done\nat pre (hook.ts:6:94)',
    );
    const line = logLine({ at: 0, function: 'f', source: 'hook', level: 'info', msg: 'hi\u001b[31mred' });
    expect(line).toContain('hi?[31mred');
  });
});
