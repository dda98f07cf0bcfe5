// Triton's GPU series: present with Triton's names and gpu_uuid labels when NVML sees a GPU (a
// stand-in reader here: this machine has none), absent otherwise — and NVML itself, loaded at run
// time by the addon, answers [] here without an error.
import { describe, expect, it } from 'vitest';

import type { PoolSummary } from '../../runtime/index.js';
import { gpuMetrics, newCounters } from '../../runtime/index.js';
import { Metrics } from './metrics.js';

const GPU = {
  index: 0,
  uuid: 'GPU-5f0c8a2e-0000-4000-8000-000000000000',
  name: 'NVIDIA H200',
  utilization: 0.42,
  memoryTotalBytes: 150_000_000_000,
  memoryUsedBytes: 12_500_000_000,
  powerWatts: 312.5,
};

describe('GPU metrics', () => {
  it("exports Triton's four GPU series per GPU, read at each scrape", async () => {
    let reads = 0;
    const metrics = new Metrics(
      () => [],
      async () => undefined,
      () => {
        reads++;
        return [GPU];
      },
    );
    const before = reads;
    const text = await metrics.registry.metrics();
    expect(reads).toBe(before + 1);
    const label = `{gpu_uuid="${GPU.uuid}"}`;
    expect(text).toContain(`nv_gpu_utilization${label} 0.42`);
    expect(text).toContain(`nv_gpu_memory_total_bytes${label} 150000000000`);
    expect(text).toContain(`nv_gpu_memory_used_bytes${label} 12500000000`);
    expect(text).toContain(`nv_gpu_power_usage${label} 312.5`);
  });

  it("exports a CUDA pool's allocator bytes and its cap, and nothing for a CPU pool", async () => {
    const pool = (
      device: string,
      gpuMemory?: { allocatedBytes: number; reservedBytes: number; capBytes?: number },
    ): PoolSummary => ({
      ...newCounters(),
      state: 'warm',
      instances: { total: 1, idle: 1, busy: 0, loading: 0 },
      queueDepth: 0,
      pending: 0,
      hookThreads: 0,
      function: 'f',
      version: 1,
      device,
      events: [],
      ...(gpuMemory ? { gpuMemory } : {}),
    });
    const metrics = new Metrics(() => [
      pool('cuda:0', { allocatedBytes: 1000, reservedBytes: 2048, capBytes: 4096 }),
      { ...pool('cpu'), version: 2 },
    ]);
    const text = await metrics.registry.metrics();
    const lines = text.split('\n').filter((l) => l.startsWith('hearth_pool_gpu_memory_bytes{'));
    expect(lines.sort()).toEqual([
      'hearth_pool_gpu_memory_bytes{model="f",version="1",kind="allocated"} 1000',
      'hearth_pool_gpu_memory_bytes{model="f",version="1",kind="cap"} 4096',
      'hearth_pool_gpu_memory_bytes{model="f",version="1",kind="reserved"} 2048',
    ]);
  });

  it('has no GPU series on a machine without a GPU, and NVML answers [] here without an error', async () => {
    expect(gpuMetrics()).toEqual([]);
    const text = await new Metrics(
      () => [],
      async () => undefined,
      gpuMetrics,
    ).registry.metrics();
    expect(text).not.toMatch(/nv_gpu_/);
  });
});
