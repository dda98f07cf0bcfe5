import { describe, expect, it } from 'vitest';

import { waitFor } from '../../test/helpers/wait.js';
import { FunctionLogs } from './function-logs.js';

const bytesOf = (logs: FunctionLogs, name: string) =>
  logs.recent(name).reduce((sum, e) => sum + Buffer.byteLength(e.msg), 0);

describe('FunctionLogs', () => {
  it('bounds each entry and each ring in bytes of UTF-8, not characters or entries alone', () => {
    const logs = new FunctionLogs(1000, 64 * 1024);
    // 8,192 characters of two bytes each: 16 KiB.
    logs.add({ function: 'f', version: 1, source: 'lifecycle', level: 'info', msg: 'é'.repeat(8192) });
    expect(Buffer.byteLength(logs.recent('f')[0]!.msg)).toBeLessThanOrEqual(8192);
    for (let i = 0; i < 100; i++)
      logs.add({ function: 'f', version: 1, source: 'lifecycle', level: 'info', msg: `${i} ${'x'.repeat(4096)}` });
    expect(bytesOf(logs, 'f')).toBeLessThanOrEqual(64 * 1024);
    expect(logs.bytes).toBe(bytesOf(logs, 'f'));
    // The newest are kept.
    expect(logs.recent('f').at(-1)?.msg).toMatch(/^99 /);
  });

  it("drops a flood of a tenant's error entries past its budget and says how many, in its own log only", async () => {
    const logs = new FunctionLogs();
    const sent = 10_000;
    let kept = 0;
    for (let i = 0; i < sent; i++)
      if (
        logs.add({
          function: 'f',
          version: 1,
          source: 'error',
          level: 'error',
          msg: `HOOK_FAILED: ${'x'.repeat(1000)}`,
        })
      )
        kept++;
    const ended = Date.now();
    logs.add({ function: 'g', version: 1, source: 'error', level: 'error', msg: 'another function' });
    expect(kept).toBeLessThan(sent);
    // The budget's burst: 5 s of 256 KiB and 100 lines a second.
    expect(bytesOf(logs, 'f')).toBeLessThanOrEqual(5 * 256 * 1024);
    // Notices count what was dropped: with the next entry let through, and once the flood stops
    // (on its own, a second later).
    const notices = await waitFor(
      'the notice after the flood',
      () => logs.recent('f').filter((e) => e.source === 'lifecycle'),
      (n) => n.some((e) => e.at > ended),
      { intervalMs: 100 },
    );
    const dropped = notices.map((e) => Number(/^hearth: (\d+) log entries dropped/.exec(e.msg)?.[1]));
    expect(dropped.reduce((a, b) => a + b, 0) + kept).toBe(sent);
    expect(logs.recent('g').map((e) => e.msg)).toEqual(['another function']);
  });
});
