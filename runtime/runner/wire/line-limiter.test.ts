import { describe, expect, it } from 'vitest';

import { LineLimiter } from './line-limiter.js';

const limits = { linesPerSecond: 10, bytesPerSecond: 1000, burstSeconds: 2, maxLineBytes: 50 };

describe('LineLimiter', () => {
  it('lets a burst of lines through, drops the rest, and says how many it dropped on the next line let through', () => {
    let now = 0;
    const l = new LineLimiter(limits, () => now);
    const out: string[] = [];
    for (let i = 0; i < 30; i++) out.push(...l.take(`line ${i}`));
    // A burst of 2 s × 10 lines.
    expect(out).toEqual(Array.from({ length: 20 }, (_, i) => `line ${i}`));
    expect(l.dropped).toBe(10);
    now += 100; // one line's worth
    expect(l.take('after')).toEqual([expect.stringMatching(/^hearth: 10 line\(s\) of output dropped/), 'after']);
    expect(l.dropped).toBe(0);
  });

  it('counts bytes as well as lines, and cuts long lines', () => {
    const now = 0;
    const l = new LineLimiter(limits, () => now);
    const long = 'x'.repeat(500);
    const [cut] = l.take(long);
    expect(cut).toBe(`${'x'.repeat(50)}… (cut at 50 characters)`);
    let let_ = 1;
    for (let i = 0; i < 100; i++) let_ += l.take(long).length > 0 ? 1 : 0;
    // 2,000 bytes of budget, each cut line about 74 characters.
    expect(let_).toBe(Math.min(20, Math.floor(2000 / cut!.length)));
  });

  it('reports what it dropped once the flood stops, when flushed', () => {
    let now = 0;
    const l = new LineLimiter(limits, () => now);
    for (let i = 0; i < 25; i++) l.take('x');
    expect(l.flush()).toEqual([]);
    now += 1000;
    expect(l.flush()).toEqual([expect.stringMatching(/^hearth: 5 line\(s\)/)]);
    expect(l.flush()).toEqual([]);
  });
});
