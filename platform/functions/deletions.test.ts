import { describe, expect, it } from 'vitest';

import { Deletions } from './deletions.js';

describe('deletions', () => {
  it('hears a delete made here, and one a cluster sweep finds (a name gone or created anew), once', () => {
    const d = new Deletions();
    const heard: [string, string | undefined][] = [];
    d.listen((name, createdAt) => heard.push([name, createdAt]));
    d.listed([
      { name: 'a', createdAt: '1' },
      { name: 'b', createdAt: '1' },
      { name: 'c', createdAt: '1' },
    ]);
    expect(heard).toEqual([]);
    d.deleted('a');
    // b deleted through another node, c deleted and deployed again there; a's delete was heard already.
    d.listed([
      { name: 'c', createdAt: '2' },
      { name: 'd', createdAt: '1' },
    ]);
    d.listed([
      { name: 'c', createdAt: '2' },
      { name: 'd', createdAt: '1' },
    ]);
    expect(heard).toEqual([
      ['a', undefined],
      ['b', undefined],
      ['c', '2'],
    ]);
  });
});
