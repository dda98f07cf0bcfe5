/**
 * How many more instances a pool's device takes: by memory (each instance costs what the first one
 * took beyond its weights, measured at load) and, on the CPU, by engine lanes (an instance per lane:
 * each lane's forwards use `intraOp` threads of the cores).
 */
import { availableParallelism } from 'node:os';

import { devices, threads } from '../engine/index.js';

/** A device's memory as the engine reports it; a model kept on its saved devices (KIND_MODEL) counts on the CPU. */
export function deviceMemory(device: string): { memoryFreeBytes: number; memoryTotalBytes: number } | undefined {
  const id = device === 'model' ? 'cpu' : device === 'cuda' ? 'cuda:0' : device;
  return devices().devices.find((d) => d.id === id);
}

export function freeBytes(device: string): number {
  return deviceMemory(device)?.memoryFreeBytes ?? 0;
}

/**
 * What an instance adds beyond the weights (activations, workspace), from the free memory before
 * and after the first one loaded: at least a sixteenth of the weights, as a floor for a noisy reading.
 */
export function instanceCost(freeBefore: number, freeAfter: number, weightBytes: number): number {
  return Math.max(freeBefore - freeAfter - weightBytes, weightBytes / 16, 1);
}

/** Instances that still fit beside `instances` of `instanceBytes` each, keeping a tenth of the device free. */
export function room(device: string, instanceBytes: number, instances: number): number {
  const memory = deviceMemory(device);
  if (!memory || instanceBytes === 0) return 0;
  const fits = Math.max(0, Math.floor((memory.memoryFreeBytes - memory.memoryTotalBytes / 10) / instanceBytes));
  if (device !== 'cpu' && device !== 'model') return fits;
  const lanes = Math.max(1, Math.floor(availableParallelism() / threads().intraOp));
  return Math.min(fits, Math.max(0, lanes - instances));
}
