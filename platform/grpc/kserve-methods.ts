/**
 * The service's methods beside infer, each a codec over the protocol's core (../kserve): health and
 * server metadata, a model's readiness, metadata, configuration and statistics, system and CUDA
 * shared memory, and Triton's repository extension.
 */
import type { Kserve } from '../kserve/index.js';
import { cudaSharedMemoryUnsupported, readLoadParameters } from '../kserve/index.js';
import type { Calls } from './calls.js';
import { unwrapParameters } from './tensors.js';

/** Health (no key needed) and the server's metadata. */
export function serverMethods(kserve: Kserve, { unary }: Calls) {
  return {
    ServerLive: unary('none', async () => ({ live: true })),
    ServerReady: unary('none', async () => ({ ready: kserve.ready() })),
    ServerMetadata: unary('invoke', async () => kserve.serverMetadata()),
  };
}

/** A model's readiness, metadata, configuration and statistics. */
export function modelMethods(kserve: Kserve, { unary }: Calls) {
  return {
    ModelReady: unary('invoke', async (call) => ({
      ready: await kserve.modelReady(String(call.request.name), String(call.request.version ?? '')),
    })),
    ModelMetadata: unary('invoke', async (call) =>
      kserve.modelMetadata(String(call.request.name), String(call.request.version ?? '')),
    ),
    ModelConfig: unary('invoke', async (call) => ({
      config: await kserve.modelConfig(String(call.request.name), String(call.request.version ?? '')),
    })),
    ModelStatistics: unary('invoke', async (call) =>
      kserve.statistics(String(call.request.name ?? ''), String(call.request.version ?? '')),
    ),
  };
}

/** System shared memory, each caller's own regions; CUDA shared memory, which this node has none of. */
export function sharedMemoryMethods(kserve: Kserve, { unary }: Calls) {
  const shm = kserve.sharedMemory;
  return {
    SystemSharedMemoryStatus: unary('invoke', async (call, owner) => {
      const regions = shm.status(owner, String(call.request.name ?? ''));
      return { regions: Object.fromEntries(regions.map((r) => [r.name, r])) };
    }),
    SystemSharedMemoryRegister: unary('shm', async (call, owner) => {
      shm.register(owner, String(call.request.name ?? ''), call.request);
      return {};
    }),
    SystemSharedMemoryUnregister: unary('invoke', async (call, owner) => {
      shm.unregister(owner, String(call.request.name ?? ''));
      return {};
    }),
    CudaSharedMemoryStatus: unary('invoke', async () => ({ regions: {} })),
    CudaSharedMemoryRegister: unary('invoke', async () => cudaSharedMemoryUnsupported()),
    CudaSharedMemoryUnregister: unary('invoke', async () => ({})),
  };
}

/** Triton's repository extension (an admin's). */
/** A load's file: contents are at most `maxFileBytes` together (the largest message: HEARTH_MAX_BODY_BYTES). */
export function repositoryMethods(kserve: Kserve, { unary }: Calls, maxFileBytes: number) {
  return {
    RepositoryIndex: unary('admin', async () => ({ models: await kserve.repositoryIndex() })),
    RepositoryModelLoad: unary('admin', async (call) => {
      const parameters = call.request.parameters as Record<string, Record<string, unknown>> | undefined;
      await kserve.load(
        String(call.request.model_name),
        readLoadParameters(unwrapParameters(parameters), maxFileBytes),
      );
      return {};
    }),
    RepositoryModelUnload: unary('admin', async (call) => {
      await kserve.unload(String(call.request.model_name));
      return {};
    }),
  };
}
