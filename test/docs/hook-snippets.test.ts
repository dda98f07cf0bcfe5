/**
 * The image hooks the README and docs/functions-and-hooks.md show type-check as written, with the
 * checker `hearth deploy` runs on a hook (sdk/hooks/typecheck.ts).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { formatProblem, typecheckHook } from '../../sdk/hooks/typecheck.js';
import { REPO_ROOT } from '../helpers/fixtures.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-snippets-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

/** The ```ts blocks of a document that define a hook. */
async function hookBlocks(file: string): Promise<string[]> {
  const text = await readFile(join(REPO_ROOT, file), 'utf8');
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((b) => b.includes('transforms as T'));
}

describe('image hook snippets', () => {
  it.each(['README.md', 'docs/functions-and-hooks.md'])('%s: type-checks as written', async (file) => {
    const blocks = await hookBlocks(file);
    expect(blocks.length).toBeGreaterThan(0);
    for (const [i, block] of blocks.entries()) {
      const hook = `${file.replace(/\W/g, '-')}-${i}.ts`;
      await writeFile(join(dir, hook), block);
      expect((await typecheckHook(dir, hook)).map(formatProblem)).toEqual([]);
    }
  });
});
