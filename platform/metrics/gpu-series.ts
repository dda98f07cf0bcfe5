/** Triton's GPU series, labelled by gpu_uuid as Triton labels them, read from NVML at each scrape. */

import type { Registry as PromRegistry } from 'prom-client';
import { Gauge } from 'prom-client';

import type { GpuMetric } from '../../runtime/index.js';

export function gpuGauges(registry: PromRegistry, gpus: () => GpuMetric[]): void {
  let latest: GpuMetric[] = [];
  const gpuGauge = (name: string, help: string, value: (g: GpuMetric) => number | undefined, first = false) =>
    new Gauge({
      name,
      help,
      labelNames: ['gpu_uuid'],
      registers: [registry],
      collect() {
        // One NVML read per scrape, by the first gauge collected; the others use it.
        if (first) latest = gpus();
        this.reset();
        for (const g of latest) {
          const v = value(g);
          if (v !== undefined) this.set({ gpu_uuid: g.uuid ?? String(g.index) }, v);
        }
      },
    });
  gpuGauge('nv_gpu_utilization', 'GPU utilization rate [0.0 - 1.0)', (g) => g.utilization, true);
  gpuGauge('nv_gpu_memory_total_bytes', 'GPU total memory, in bytes', (g) => g.memoryTotalBytes);
  gpuGauge('nv_gpu_memory_used_bytes', 'GPU used memory, in bytes', (g) => g.memoryUsedBytes);
  gpuGauge('nv_gpu_power_usage', 'GPU power usage in watts', (g) => g.powerWatts);
}
