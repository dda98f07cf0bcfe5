/** HookPools over test/fixtures/hooks for the hook tests, closed after the file's tests. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll } from 'vitest';

import { bundleHook, HookPool } from '../../../runtime/hooks/index.js';
import { parseSpec } from '../../../sdk/spec/index.js';
import { REPO_ROOT } from '../../helpers/fixtures.js';
import { SMALL_SPEC } from '../../helpers/specs.js';

const outDir = await mkdtemp(join(tmpdir(), 'hearth-hooks-'));
const pools: HookPool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
  await rm(outDir, { recursive: true, force: true });
});

export const spec = parseSpec({ ...SMALL_SPEC, hook: 'hook.ts' });

/** A fixture hook bundled (test/fixtures/hooks/NAME.ts). */
export const fixtureBundle = (hook: string) =>
  bundleHook(join(REPO_ROOT, 'test', 'fixtures', 'hooks', `${hook}.ts`), outDir);

export async function pool(
  hook?: string,
  extra: {
    timeoutMs?: number;
    maxHeapMb?: number;
    threads?: number;
    sandbox?: boolean;
    inline?: boolean;
    spec?: typeof spec;
  } = {},
): Promise<HookPool> {
  const bundlePath = hook ? (await fixtureBundle(hook)).path : undefined;
  const p = await HookPool.create({ spec, version: 1, bundlePath, ...extra });
  pools.push(p);
  return p;
}

export const json = (value: unknown) => ({
  body: new TextEncoder().encode(JSON.stringify(value)),
  contentType: 'application/json',
});
export const y = (rows: number[][]) => ({
  y: { dtype: 'FP32' as const, shape: [rows.length, 3], data: new Float32Array(rows.flat()) },
});
