/**
 * The forward() signature check at deploy, on a real node: a model whose forward(a, b) takes two
 * inputs deployed with a spec that names one is refused before any warm-up forward, with 422 and a
 * one-line reason that names both sides and the file to edit; the whole message is in the
 * function's log. A BYTES input bound to a Tensor argument is refused the same way; the right spec
 * deploys. Calls that conflict with a function's state are 409 with what to do.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../platform/node/index.js';
import { Hearth } from '../../sdk/client.js';
import { deployFixture, testNode } from '../helpers/node.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-signature-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const spec = (name: string, inputs: object[]) => ({
  name,
  model: 'model.pt',
  maxBatchSize: 0,
  inputs,
  outputs: [
    { name: 'sum', dtype: 'FP32', dims: [4] },
    { name: 'product', dtype: 'FP32', dims: [4] },
  ],
});

describe('the forward() signature check at deploy', () => {
  let node: HearthNode;
  beforeAll(async () => {
    node = await testNode(join(dir, 'node'));
  });
  afterAll(() => node.close());

  it('refuses a spec with fewer inputs than forward() takes: 422, both sides named, hearth.yaml to edit', async () => {
    const response = await deployFixture(node.httpUrl, spec('one-input', [{ name: 'a', dtype: 'FP32', dims: [4] }]), {
      model: 'add_mul',
    });
    expect(response.status).toBe(422);
    const body = (await response.json()) as { status: string; reason: string };
    expect(body.status).toBe('failed');
    expect(body.reason).toContain('the spec has 1 input(s) (a)');
    expect(body.reason).toContain('forward(a, b) takes 2');
    expect(body.reason).toContain('add "b" to inputs in hearth.yaml');
    expect(body.reason).not.toContain('\n');
    // Refused before any forward ran: no warm-up error, no TorchScript traceback.
    expect(body.reason).not.toMatch(/warm-up|Traceback/);
    const client = new Hearth({ url: node.httpUrl });
    const versions = (await client.describe('one-input')).versions;
    expect(versions.map((v) => [v.status, v.reason])).toEqual([['failed', body.reason]]);
    const log = await client.logs('one-input');
    expect(log.some((e) => e.level === 'error' && e.msg.includes('forward(a, b) takes 2'))).toBe(true);
    // --since: entries from then on only.
    expect(await client.logs('one-input', { since: log[0]!.at })).toHaveLength(log.length);
    expect(await client.logs('one-input', { since: Date.now() + 60_000 })).toEqual([]);
  });

  it('refuses a BYTES input bound to a Tensor argument', async () => {
    const response = await deployFixture(
      node.httpUrl,
      spec('bytes-to-tensor', [
        { name: 'a', dtype: 'BYTES', dims: [1] },
        { name: 'b', dtype: 'FP32', dims: [4] },
      ]),
      { model: 'add_mul' },
    );
    expect(response.status).toBe(422);
    const { reason } = (await response.json()) as { reason: string };
    expect(reason).toContain('input "a" is BYTES (forward() gets it as a List[str])');
    expect(reason).toContain('argument "a" is a Tensor');
  });

  it('deploys the spec that matches forward(a, b)', async () => {
    const response = await deployFixture(
      node.httpUrl,
      spec('two-inputs', [
        { name: 'a', dtype: 'FP32', dims: [4] },
        { name: 'b', dtype: 'FP32', dims: [4] },
      ]),
      { model: 'add_mul' },
    );
    expect(response.status).toBe(201);
  });

  it('refuses what conflicts with the state with 409 and what to do: traffic to a failed version, a rollback with nothing before', async () => {
    const traffic = await fetch(`${node.httpUrl}/api/v1/functions/one-input/traffic`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ traffic: { 1: 100 } }),
    });
    expect(traffic.status).toBe(409);
    expect(await traffic.json()).toMatchObject({
      code: 'CONFLICT',
      error: expect.stringMatching(
        /v1 is failed .*only ready versions take traffic \(see `hearth versions one-input`\)/,
      ),
    });
    const rollback = await fetch(`${node.httpUrl}/api/v1/functions/two-inputs/rollback`, { method: 'POST' });
    expect(rollback.status).toBe(409);
    expect(await rollback.json()).toMatchObject({
      code: 'CONFLICT',
      error: expect.stringContaining(
        'nothing to roll back to (set one with `hearth traffic two-inputs VERSION=WEIGHT`)',
      ),
    });
  });
});
