/**
 * A canary is judged by the calls the traffic split sent it, on both sides (issue 42): calls pinned
 * to a version by URL — another key's `/fn/NAME/versions/N`, KServe's versioned infer path — count
 * for neither the canary nor the baseline, so nobody can roll back (or promote) the owner's canary
 * by calling a version directly.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, expect, it } from 'vitest';

import type { HearthNode } from '../../platform/node/index.js';
import { deployFixture, testNode } from '../helpers/node.js';
import { SMALL_SPEC } from '../helpers/specs.js';

const OWNER = 'owner-key-0123456789';
const OTHER = 'other-key-0123456789';
const dir = await mkdtemp(join(tmpdir(), 'hearth-canary-pinned-'));
let node: HearthNode;

beforeAll(async () => {
  node = await testNode(join(dir, 'node'), { HEARTH_API_KEYS: `${OWNER}:admin,${OTHER}:invoke` });
});
afterAll(async () => {
  await node?.close();
  await rm(dir, { recursive: true, force: true });
});

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

async function call(path: string, key: string, body: object): Promise<number> {
  const r = await fetch(`${node.httpUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...bearer(key) },
    body: JSON.stringify(body),
  });
  await r.arrayBuffer();
  return r.status;
}

interface Info {
  traffic: Record<string, number>;
  canary: {
    state: string;
    observed?: { canary: { calls: number; failed: number }; baseline: { calls: number; failed: number } };
  };
}

const info = async () =>
  (await (await fetch(`${node.httpUrl}/api/v1/functions/pinned`, { headers: bearer(OWNER) })).json()) as Info;

it("does not count calls pinned to a version (another key's failures) for the canary or its baseline", async () => {
  // fail-some: echo's answers, and a 500 from post for a request that asks for one ({"fail": true}).
  const spec = { ...SMALL_SPEC, name: 'pinned', hook: 'hook.ts' };
  const v1 = await deployFixture(node.httpUrl, spec, { model: 'small', hook: 'fail-some' }, bearer(OWNER));
  expect(v1.status).toBe(201);
  const canary = { canary: { percent: 10, windowMs: 3_600_000 } };
  const v2 = await deployFixture(node.httpUrl, spec, { model: 'small', hook: 'fail-some' }, bearer(OWNER), canary);
  expect(v2.status).toBe(201);
  const row = { x: [[1, 2, 3, 4]] };
  // Another key: fifteen failing calls pinned to the canary, a few answered ones pinned to v1, and
  // KServe's versioned path to the canary.
  for (let i = 0; i < 15; i++) expect(await call('/fn/pinned/versions/2', OTHER, { ...row, fail: true })).toBe(500);
  for (let i = 0; i < 5; i++) expect(await call('/fn/pinned/versions/1', OTHER, row)).toBe(200);
  const kserve = {
    inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }],
  };
  for (let i = 0; i < 3; i++) expect(await call('/v2/models/pinned/versions/2/infer', OTHER, kserve)).toBe(200);
  await node.service.checkCanaries();
  const pinned = await info();
  expect(pinned.canary.state).toBe('watching');
  expect(pinned.traffic).toEqual({ 1: 90, 2: 10 });
  expect(pinned.canary.observed).toMatchObject({ canary: { calls: 0, failed: 0 }, baseline: { calls: 0, failed: 0 } });
  // Calls the split routes are counted, on the side it sent each to.
  const routed = 20;
  for (let i = 0; i < routed; i++) expect(await call('/fn/pinned', OTHER, row)).toBe(200);
  await node.service.checkCanaries();
  const seen = (await info()).canary.observed!;
  expect(seen.canary.calls + seen.baseline.calls).toBe(routed);
  expect(seen.canary.failed + seen.baseline.failed).toBe(0);
});
