/**
 * A model's trace setting left on a node that has not heard its function deleted (in a cluster,
 * before its registry sweep): an admin still reads and clears it, a deploy key gets "unknown model"
 * (as for a name that never was), and no call of the name is sampled meanwhile. A real registry on
 * disk and the real FunctionService; the tracer is not told of the delete, as such a node's is not.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { parseSpec } from '../../../sdk/spec/index.js';
import { createArtifactStore } from '../../artifacts/index.js';
import type { Caller } from '../../caller/index.js';
import { NO_KEYS } from '../../caller/index.js';
import { loadConfig } from '../../config/index.js';
import { FunctionService } from '../../functions/index.js';
import { createRegistry } from '../../registry/index.js';
import { Kserve } from '../protocol.js';
import { SharedMemoryRegions } from '../shared-memory.js';
import { TRACE_DEFAULTS, TraceFile, Tracer } from './index.js';

const DEPLOY: Caller = { key: 'deploy-key', id: 'deploy-key', scope: 'deploy', tenant: NO_KEYS.tenant };
let dir: string;
let service: FunctionService;
let kserve: Kserve;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hearth-leftover-'));
  const config = loadConfig({ HEARTH_DATA_DIR: dir });
  const registry = createRegistry(config);
  const artifacts = createArtifactStore(config, () => undefined);
  service = new FunctionService({ registry, artifacts, dataDir: dir });
  const spec = parseSpec({
    name: 'gone',
    model: 'model.pt',
    inputs: [{ name: 'x', dtype: 'FP32', dims: [4] }],
    outputs: [{ name: 'y', dtype: 'FP32', dims: [3] }],
  });
  await registry.createVersion(spec, { model: 'a'.repeat(64) });
  kserve = new Kserve({
    functions: service,
    artifacts,
    ready: () => true,
    version: 'test',
    sharedMemory: new SharedMemoryRegions(),
    cudaAvailable: () => false,
    tracer: new Tracer(new TraceFile(join(dir, 'traces')), TRACE_DEFAULTS),
  });
});
afterAll(async () => {
  await kserve.tracer.close();
  await service.close();
  await rm(dir, { recursive: true, force: true });
});

const values = (answer: [string, string[]][]) => Object.fromEntries(answer.map(([n, v]) => [n, v[0]]));

describe('a trace setting left for a deleted function', () => {
  it('is read and cleared by an admin only, and samples nothing', async () => {
    const set = new Map([
      ['trace_level', ['TIMESTAMPS']],
      ['trace_rate', ['1']],
    ]);
    expect(values(await kserve.as(DEPLOY).traceSetting('gone', set))).toMatchObject({ trace_rate: '1' });
    await service.delete('gone');

    expect(await kserve.as(DEPLOY).startTrace('gone')).toBeUndefined();
    await expect(kserve.as(DEPLOY).traceSetting('gone')).rejects.toThrow('Request for unknown model : gone');
    const admin = kserve.as(NO_KEYS);
    expect(values(await admin.traceSetting('gone'))).toMatchObject({ trace_level: 'TIMESTAMPS', trace_rate: '1' });
    const clear = new Map([
      ['trace_level', null],
      ['trace_rate', null],
    ]);
    expect(values(await admin.traceSetting('gone', clear))).toMatchObject({ trace_level: 'OFF', trace_rate: '1000' });
    // Nothing left: the name is unknown to an admin too, as one that never was.
    await expect(admin.traceSetting('gone')).rejects.toThrow('Request for unknown model : gone');
  });
});
