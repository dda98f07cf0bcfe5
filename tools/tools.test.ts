import { describe, expect, it } from 'vitest';

import { cycles, unitOf } from './folder-cycles.js';
import { longTsFunctions } from './sizes.js';

const body = (lines: number) => Array.from({ length: lines }, (_, i) => `  const a${i} = ${i};`).join('\n');

describe('longTsFunctions', () => {
  it('counts a function from its first line to its last, nested closures included', () => {
    const text = `export function outer() {\n  const inner = () => {\n${body(10)}\n  };\n${body(5)}\n}\n`;
    // outer: 1 (signature) + 1 + 10 + 1 + 5 + 1 (closing) = 19 lines; inner: 12.
    expect(longTsFunctions('x.ts', text, 18)).toEqual([{ file: 'x.ts', line: 1, name: 'outer', lines: 19 }]);
    expect(longTsFunctions('x.ts', text, 11).map((f) => [f.name, f.lines])).toEqual([
      ['outer', 19],
      ['inner', 12],
    ]);
  });

  it('names methods, constructors and arrows held by a property', () => {
    const text = `class A {\n  constructor() {\n${body(3)}\n  }\n  #run() {\n${body(3)}\n  }\n}\nconst o = { go: () => {\n${body(3)}\n} };\n`;
    expect(longTsFunctions('x.ts', text, 4).map((f) => f.name)).toEqual(['constructor', '#run', 'go']);
  });
});

describe('folder cycles', () => {
  it('gives a module its folder, or the file itself at a layer root', () => {
    expect(unitOf('platform/jobs/index.ts')).toBe('platform/jobs/');
    expect(unitOf('platform/config.ts')).toBe('platform/config.ts');
    expect(unitOf('test/helpers/node.ts')).toBeUndefined();
    expect(unitOf('node_modules/ioredis/built/index.js')).toBeUndefined();
  });

  it('finds each cycle of units once, and nothing in a graph that only points one way', () => {
    const graph = (pairs: [string, string][]) => {
      const edges = new Map<string, Set<string>>();
      for (const [a, b] of pairs) {
        if (!edges.has(a)) edges.set(a, new Set());
        edges.get(a)!.add(b);
      }
      return edges;
    };
    expect(
      cycles(
        graph([
          ['a', 'b'],
          ['b', 'c'],
          ['a', 'c'],
        ]),
      ),
    ).toEqual([]);
    expect(
      cycles(
        graph([
          ['a', 'b'],
          ['b', 'c'],
          ['c', 'a'],
          ['c', 'd'],
          ['d', 'e'],
          ['e', 'd'],
        ]),
      ),
    ).toEqual([
      ['d', 'e'],
      ['a', 'b', 'c'],
    ]);
  });
});
