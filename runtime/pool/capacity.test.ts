import { availableParallelism } from 'node:os';

import { describe, expect, it } from 'vitest';

import { parseSpec } from '../../sdk/spec/index.js';
import { LONG_FORWARD_MS, lentThreads } from './capacity.js';

const spec = (threads = 0) =>
  parseSpec({
    name: 'f',
    model: 'model.pt',
    maxBatchSize: 8,
    instances: { device: 'cpu', threads },
    inputs: [{ name: 'x', dtype: 'FP32', dims: [4] }],
    outputs: [{ name: 'y', dtype: 'FP32', dims: [3] }],
  });

describe("a CPU forward's intra-op threads", () => {
  const cores = availableParallelism();
  const load = (o: Partial<Parameters<typeof lentThreads>[2]>) => ({
    requests: 4,
    pending: 8,
    alone: true,
    lastForwardMs: 5,
    ...o,
  });
  it('lends every core to a lone request, and to a long forward that runs alone under load', () => {
    expect(lentThreads(spec(), 'cpu', load({ requests: 1, pending: 1 }))).toBe(cores);
    expect(lentThreads(spec(), 'cpu', load({ lastForwardMs: LONG_FORWARD_MS }))).toBe(cores);
  });
  it('keeps the configured threads for short forwards under load, beside another forward, or when the function sets them', () => {
    expect(lentThreads(spec(), 'cpu', load({}))).toBeUndefined();
    expect(lentThreads(spec(), 'cpu', load({ lastForwardMs: 200, alone: false }))).toBeUndefined();
    expect(lentThreads(spec(2), 'cpu', load({ requests: 1, pending: 1 }))).toBeUndefined();
    expect(lentThreads(spec(), 'cuda:0', load({ lastForwardMs: 200 }))).toBeUndefined();
  });
});
