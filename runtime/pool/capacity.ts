/**
 * How many more instances a pool's device takes: by memory (each instance costs what the first one
 * took beyond its weights, measured at load) and, on the CPU, by engine lanes (an instance per lane:
 * each lane's forwards use `intraOp` threads of the cores); and the cores a lone forward is lent.
 */

import { DeviceUnavailableError } from '../../sdk/errors.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import { gpuMemoryBytes } from '../../sdk/spec/function-spec.js';
import { capCudaMemory, cudaMemory, devices, threads, usableCores } from '../engine/index.js';

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
  const lanes = Math.max(1, Math.floor(usableCores().cores / threads().intraOp));
  return Math.min(fits, Math.max(0, lanes - instances));
}

/**
 * Where a pool runs: the spec's device, with `auto` and `cuda` placed on the GPU with the most free
 * memory now (pools spread over a node's GPUs as they load); `auto` without CUDA is the CPU.
 */
export function placeDevice(device: string): string {
  if (device !== 'auto' && device !== 'cuda') return device;
  const report = devices();
  const gpus = report.cudaAvailable ? report.devices.filter((d) => d.kind === 'cuda') : [];
  if (gpus.length === 0) return device === 'auto' ? 'cpu' : 'cuda:0';
  return gpus.reduce((a, d) => (d.memoryFreeBytes > a.memoryFreeBytes ? d : a)).id;
}

const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;

/**
 * A pool's GPU memory cap (instances.gpuMemory) in bytes on its device, checked against what the
 * device has free: a pool is not placed where its cap does not fit (DEVICE_UNAVAILABLE, retried by
 * the caller's policy). With `apply` (the pool has its runner process to itself) the process's
 * caching allocator is capped there. Undefined without a cap or off CUDA.
 */
export function gpuCap(spec: FunctionSpec, device: string, apply: boolean): number | undefined {
  if (spec.instances.gpuMemory === undefined || !device.startsWith('cuda')) return undefined;
  const memory = deviceMemory(device);
  if (!memory) throw new DeviceUnavailableError(`${device} is not a device of this node`);
  const cap = gpuMemoryBytes(spec.instances.gpuMemory, memory.memoryTotalBytes)!;
  if (cap > memory.memoryFreeBytes)
    throw new DeviceUnavailableError(
      `${device} has ${gib(memory.memoryFreeBytes)} free and ${spec.name}'s instances.gpuMemory asks ${gib(cap)}`,
    );
  if (apply) capCudaMemory(device, cap, memory.memoryTotalBytes);
  return cap;
}

/** Instances that fit under a cap beside what the process's allocator holds on the device now. */
export function roomUnderCap(device: string, capBytes: number, instanceBytes: number): number {
  if (instanceBytes === 0) return 0;
  const held = cudaMemory(device)?.reservedBytes ?? 0;
  return Math.max(0, Math.floor((capBytes - held) / instanceBytes));
}

/** The cores this process may use: what a lone forward is lent (lentThreads). */
const CORES = usableCores().cores;

/**
 * A forward this long (ms) outweighs the JavaScript around its requests (HTTP, hooks, batching: a
 * few ms a request): lent every core while no other forward of the pool runs. Well above the MLP's
 * batch of 64 (~8 ms), whose c=64 two threads would cost a third; a ResNet-50 batch takes hundreds.
 */
export const LONG_FORWARD_MS = 50;

/**
 * A lone request's forward on a CPU pool that holds nothing else takes every core; under load it
 * runs on the configured intra-op threads (cores - 1 by default, the rest kept for HTTP, hooks and
 * batching). Measured on the MLP behind a JSON hook (2 cores): c=1 82-92 → 102-109 req/s, the
 * forward 7.4-8.1 → 5.7-5.9 ms, where 2 threads for every forward cost c=64 a third (555 → 368).
 * A long forward (LONG_FORWARD_MS, the pool's last) that runs `alone` takes every core under load
 * too: a ResNet-50 queue of 8 held one instance on one core while the other waited on a few ms of
 * hooks. A function that sets its threads (INTRA_OP_THREAD_COUNT) keeps them.
 */
export function lentThreads(
  spec: FunctionSpec,
  device: string,
  load: { requests: number; pending: number; alone: boolean; lastForwardMs: number },
): number | undefined {
  if (spec.instances.threads > 0 || device !== 'cpu') return undefined;
  if (load.requests === 1 && load.pending === 1) return CORES;
  return load.alone && load.lastForwardMs >= LONG_FORWARD_MS ? CORES : undefined;
}

/** How a CPU function's forwards share the node's cores: what `hearth describe` and a deploy say. */
export interface ThreadPlan {
  /** The cores this node may use (its CPUs, or its cgroup's CPU quota). */
  cores: number;
  /** Intra-op threads of each forward: the spec's instances.threads, else the node's default. */
  threadsPerInstance: number;
  /** The most instances that run forwards at once: instances.count, or the autoscaler's ceiling (lanes). */
  instances: number;
  /** Whether a lone request's forward is lent every core (lentThreads: the spec sets no threads). */
  lentWhenAlone: boolean;
  /** Said where threads × instances is more than the cores. */
  warning?: string;
}

/**
 * The plan for `spec` on this node, or undefined off the CPU. The autoscaler adds CPU instances up to
 * the lanes of the pool's runner (cores ÷ its intra-op threads, which are the spec's where it sets
 * them: room()), never past scaling.maxInstances; instances.count starts that many regardless, and a
 * spec's threads may be more than the cores.
 */
export function threadPlan(spec: FunctionSpec): ThreadPlan | undefined {
  const device = placeDevice(spec.instances.device);
  if (device !== 'cpu' && device !== 'model') return undefined;
  const cores = usableCores().cores;
  const threadsPerInstance = spec.instances.threads > 0 ? spec.instances.threads : threads().intraOp;
  const lanes = Math.max(1, Math.floor(cores / threadsPerInstance));
  const instances = Math.max(spec.instances.count, Math.min(spec.scaling.maxInstances, lanes));
  const plan: ThreadPlan = { cores, threadsPerInstance, instances, lentWhenAlone: spec.instances.threads === 0 };
  const total = threadsPerInstance * instances;
  if (total > cores)
    plan.warning = `${spec.name} may run ${instances} instance${instances === 1 ? '' : 's'} × ${threadsPerInstance} intra-op thread${threadsPerInstance === 1 ? '' : 's'} = ${total} threads on the ${cores} core${cores === 1 ? '' : 's'} this node may use: its forwards would wait for each other (set instances.threads to ${Math.max(1, Math.floor(cores / instances))}${spec.instances.count > 1 ? ' or fewer instances.count' : ''}, --threads on a deploy)`;
  return plan;
}
