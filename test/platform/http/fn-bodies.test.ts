/**
 * Function URL bodies are read into buffers the node uses again once a call is answered (as
 * KServe's are): every call, many at once and one after another, must be answered from its own
 * bytes, never another call's. (A job's body is kept past its 202, and is not pooled: the jobs
 * tests' retried job runs on its own body.)
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../../platform/node/index.js';
import { deployFixture, testNode } from '../../helpers/node.js';
import { SMALL_SPEC } from '../../helpers/specs.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-fn-bodies-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('function URL bodies in buffers used again', () => {
  let node: HearthNode;
  beforeAll(async () => {
    node = await testNode(join(dir, 'node'));
    // post-reads answers a binary body reversed, read in post (after the forward).
    const r = await deployFixture(
      node.httpUrl,
      { ...SMALL_SPEC, hook: 'hook.ts' },
      { model: 'small', hook: 'post-reads', bundles: join(dir, 'bundles') },
    );
    expect(r.status).toBe(201);
  });
  afterAll(() => node?.close());

  it('answers each call from its own bytes, sixteen at a time and wave after wave', async () => {
    for (let wave = 0; wave < 3; wave++) {
      // Sizes across the buffers' classes (64 KiB up), the larger first so smaller bodies reuse them.
      const bodies = Array.from({ length: 16 }, (_, i) => randomBytes(300_000 - i * 18_000 - wave * 1_000));
      const answers = await Promise.all(
        bodies.map(async (body) => {
          const r = await fetch(`${node.httpUrl}/fn/small`, {
            method: 'POST',
            headers: { 'content-type': 'application/octet-stream' },
            body,
          });
          expect(r.status).toBe(200);
          return new Uint8Array(await r.arrayBuffer());
        }),
      );
      for (const [i, body] of bodies.entries())
        expect(Buffer.from(answers[i]!).equals(Buffer.from(body).reverse())).toBe(true);
    }
  });
});
