// The deploy flags over the spec (deployFolder's logic), against a recording stand-in for the node:
// each section is merged into the spec and validated by the spec's own rules.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import type { Hearth } from '../client.js';
import type { FunctionSpec } from '../spec/index.js';
import { deployFolder } from './deploy.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-deploy-flags-'));
afterAll(() => rm(dir, { recursive: true, force: true }));
await writeFile(
  join(dir, 'hearth.yaml'),
  'name: flags\nmodel: model.pt\nmaxBatchSize: 8\ninputs: [{ name: x, dtype: FP32, dims: [4] }]\noutputs: [{ name: y, dtype: FP32, dims: [3] }]\n',
);
await writeFile(join(dir, 'model.pt'), 'not read here');

function node() {
  const deployed: FunctionSpec[] = [];
  const client = {
    artifact: async () => ({ sha256: 'x', size: 1 }),
    deploy: async (spec: FunctionSpec) => {
      deployed.push(spec);
      return { name: spec.name, version: 1, status: 'ready', url: '/fn/flags' };
    },
  } as unknown as Hearth;
  return { client, deployed };
}

describe('deploy flags', () => {
  it('override instances, scaling, batching and limits, and say so', async () => {
    const { client, deployed } = node();
    const r = await deployFolder(client, dir, {
      device: 'cpu',
      overrides: {
        instances: { count: 2, threads: 1 },
        scaling: { minInstances: 1, maxInstances: 3 },
        batching: { maxQueueSize: 100 },
        limits: { forwardTimeoutMs: 5000, hookQueueSize: 50, hookMemoryMb: undefined },
      },
    });
    expect(deployed[0]).toMatchObject({
      instances: { device: 'cpu', count: 2, threads: 1 },
      scaling: { minInstances: 1, maxInstances: 3 },
      batching: { maxQueueSize: 100 },
      limits: { forwardTimeoutMs: 5000, hookQueueSize: 50, hookMemoryMb: 256 },
    });
    expect(r.notes).toContain('instances.count, instances.threads from the deploy flags');
  });

  it('checks the flags together: more instances with a higher ceiling is fine', async () => {
    const { client, deployed } = node();
    await deployFolder(client, dir, { overrides: { instances: { count: 6 }, scaling: { maxInstances: 8 } } });
    expect(deployed[0]).toMatchObject({ instances: { count: 6 }, scaling: { maxInstances: 8 } });
  });

  it("refuses flags that break the spec's rules, naming them, and deploys nothing", async () => {
    const { client, deployed } = node();
    await expect(
      deployFolder(client, dir, { overrides: { instances: { count: 5 }, scaling: { maxInstances: 2 } } }),
    ).rejects.toThrow(/the deploy flags/);
    expect(deployed).toEqual([]);
  });
});
