import { describe, expect, it } from 'vitest';

import { inlineSourceMap, MAX_INLINE_MAP, MAX_STACK, mapStack } from './stack.js';

/** A bundle of `lines` lines, each mapped from its start to `source` (a map's whole text a tenant writes). */
function bundle(lines: number, source: string, pad = 0): string {
  const map = {
    version: 3,
    sources: [source],
    names: [],
    mappings: Array(lines).fill('AAAA').join(';'),
    pad: 'p'.repeat(pad),
  };
  const code = Array.from({ length: lines }, (_, i) => `const v${i} = ${i};`).join('\n');
  return `${code}\n//# sourceMappingURL=data:application/json;base64,${Buffer.from(JSON.stringify(map)).toString('base64')}\n`;
}

const stack = (frames: number) =>
  ['Error: deep', ...Array.from({ length: frames }, (_, i) => `    at recurse (hook.mjs:${(i % 5) + 1}:12)`)].join(
    '\n',
  );

describe('mapStack', () => {
  it('maps frames to their sources, as the map names them', () => {
    expect(mapStack(stack(2), inlineSourceMap(bundle(5, 'hook.ts')))).toBe(
      '    at recurse (hook.ts:1:1)\n    at recurse (hook.ts:1:1)',
    );
  });

  it('cuts what it mapped: each source name, each frame and the whole, however long the names', () => {
    const map = inlineSourceMap(bundle(5, 's'.repeat(512 * 1024)));
    expect(map).toBeDefined();
    const mapped = mapStack(stack(100), map);
    expect(Buffer.byteLength(mapped)).toBeLessThanOrEqual(MAX_STACK);
    const frames = mapped.split('\n');
    expect(frames.length).toBeGreaterThan(1);
    for (const frame of frames) expect(Buffer.byteLength(frame)).toBeLessThanOrEqual(512);
    expect(frames[0]).toMatch(/^ {4}at recurse \(s{100,}…/);
  });
});

describe('inlineSourceMap', () => {
  it('reads a map up to MAX_INLINE_MAP and ignores a larger one (frames stay bundle positions)', () => {
    expect(inlineSourceMap(bundle(5, 'hook.ts', MAX_INLINE_MAP / 2))).toBeDefined();
    const large = bundle(5, 'hook.ts', MAX_INLINE_MAP);
    expect(inlineSourceMap(large)).toBeUndefined();
    expect(mapStack(stack(1), inlineSourceMap(large))).toBe('    at recurse (hook.mjs:1:12)');
  });
});
