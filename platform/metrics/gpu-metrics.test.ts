// Triton's GPU series: present with Triton's names and gpu_uuid labels when NVML sees a GPU (a
// stand-in reader here: this machine has none), absent otherwise — and NVML itself, loaded at run
// time by the addon, answers [] here without an error.
import { describe, expect, it } from 'vitest';

import { gpuMetrics } from '../../runtime/index.js';
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
