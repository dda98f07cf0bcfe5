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

  it('counts bytes of UTF-8 as well as lines, and cuts long lines to their byte limit', () => {
    const l = new LineLimiter({ ...limits, linesPerSecond: 100, maxLineBytes: 100 }, () => 0);
    const [cut] = l.take('x'.repeat(500));
    const mark = '… (cut at 100 bytes)';
    expect(cut).toBe(`${'x'.repeat(100 - Buffer.byteLength(mark))}${mark}`);
    // 1,900 bytes of budget left; each line of 40 'é' is 80 bytes (40 characters).
    let let_ = 0;
    for (let i = 0; i < 100; i++) let_ += l.take('é'.repeat(40)).length > 0 ? 1 : 0;
    expect(let_).toBe(Math.floor(1900 / 80));
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
