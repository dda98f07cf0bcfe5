/**
 * A pool's model state, apart from its instances (as Triton's pytorch_backend keeps its model state
 * apart from its instance state): the device the version is placed on and its GPU memory cap, how
 * the spec's tensors bind to forward(), what one more instance costs there, and the cold start that
 * loaded it — what every instance of the version shares.
 */
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import type { Model } from '../engine/index.js';
import { cudaMemory, setIntraOpThreads } from '../engine/index.js';
import { gpuCap, placeDevice, room, roomUnderCap } from './capacity.js';
import type { IoBinding } from './io-binding.js';
import type { LoadRequest } from './loader.js';
import { loadVersion } from './loader.js';
import type { ColdStart, PoolStats } from './types.js';

export class ModelState {
  readonly #spec: FunctionSpec;
  #device = 'cpu';
  /** instances.gpuMemory in bytes on this pool's device, when capped. */
  #gpuCap: number | undefined;
  /** How the spec's tensors bind to forward()'s arguments and outputs (known once the model loads). */
  #binding: IoBinding | undefined;
  /** Device memory one more instance is estimated to take (measured at the first load). */
  #instanceBytes = 0;
  #coldStart: ColdStart | undefined;

  constructor(spec: FunctionSpec) {
    this.#spec = spec;
  }

  get device(): string {
    return this.#device;
  }

  /** The binding of the loaded model (load() has set it before any instance runs). */
  get binding(): IoBinding {
    return this.#binding!;
  }

  /** The cold start that loaded it, once it has loaded. */
  get coldStart(): ColdStart | undefined {
    return this.#coldStart;
  }

  /**
   * Places the version on its device (under its GPU cap, applied where the process is the
   * function's own) and loads it (loader.ts): the first instance, warm.
   */
  async load(request: Omit<LoadRequest, 'spec' | 'device'>, ownProcess: boolean): Promise<Model> {
    const spec = this.#spec;
    if (spec.instances.threads > 0) setIntraOpThreads(spec.instances.threads);
    this.#device = placeDevice(spec.instances.device);
    this.#gpuCap = gpuCap(spec, this.#device, ownProcess);
    const loaded = await loadVersion({ ...request, spec, device: this.#device });
    this.#binding = loaded.binding;
    this.#instanceBytes = loaded.instanceBytes;
    this.#coldStart = loaded.coldStart;
    return loaded.first;
  }

  /**
   * How many more instances the device can hold beside `instances`: what its free memory takes,
   * keeping a tenth spare, and on CPU no more than the engine's lanes (cores ÷ intra-op threads): an
   * instance past those only shares a lane, splitting batches without adding compute.
   */
  room(instances: number): number {
    const fits = room(this.#device, this.#instanceBytes, instances);
    if (this.#gpuCap === undefined) return fits;
    return Math.min(fits, roomUnderCap(this.#device, this.#gpuCap, this.#instanceBytes));
  }

  /** On CUDA: what the caching allocator holds on the pool's device, and the pool's cap. */
  gpuMemory(): { gpuMemory?: PoolStats['gpuMemory'] } {
    const held = cudaMemory(this.#device);
    if (!held && this.#gpuCap === undefined) return {};
    return {
      gpuMemory: {
        ...(held ?? { allocatedBytes: 0, reservedBytes: 0 }),
        ...(this.#gpuCap === undefined ? {} : { capBytes: this.#gpuCap }),
      },
    };
  }
}
