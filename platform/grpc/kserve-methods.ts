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
    ModelReady: unary('invoke', async (call, caller) => ({
      ready: await kserve.as(caller).modelReady(String(call.request.name), String(call.request.version ?? '')),
    })),
    ModelMetadata: unary('invoke', async (call, caller) =>
      kserve.as(caller).modelMetadata(String(call.request.name), String(call.request.version ?? '')),
    ),
    ModelConfig: unary('invoke', async (call, caller) => ({
      config: await kserve.as(caller).modelConfig(String(call.request.name), String(call.request.version ?? '')),
    })),
    ModelStatistics: unary('invoke', async (call, caller) =>
      kserve.as(caller).statistics(String(call.request.name ?? ''), String(call.request.version ?? '')),
    ),
  };
}

/** System shared memory, each caller's own regions; CUDA shared memory, which this node has none of. */
export function sharedMemoryMethods(kserve: Kserve, { unary }: Calls) {
  const shm = kserve.sharedMemory;
  return {
    SystemSharedMemoryStatus: unary('invoke', async (call, caller) => {
      const regions = shm.status(caller.key, String(call.request.name ?? ''));
      return { regions: Object.fromEntries(regions.map((r) => [r.name, r])) };
    }),
    SystemSharedMemoryRegister: unary('shm', async (call, caller) => {
      shm.register(caller.key, String(call.request.name ?? ''), call.request, {
        tenant: caller.tenant,
        admin: caller.scope === 'admin',
      });
      return {};
    }),
    SystemSharedMemoryUnregister: unary('invoke', async (call, caller) => {
      shm.unregister(caller.key, String(call.request.name ?? ''));
      return {};
    }),
    CudaSharedMemoryStatus: unary('invoke', async () => ({ regions: {} })),
    CudaSharedMemoryRegister: unary('invoke', async () => cudaSharedMemoryUnsupported()),
    CudaSharedMemoryUnregister: unary('invoke', async () => ({})),
  };
}

/** Triton's repository extension: a deploy key's, over its tenant's models (an admin's: all). */
/** A load's file: contents are at most `maxFileBytes` together (the largest message: HEARTH_MAX_BODY_BYTES). */
export function repositoryMethods(kserve: Kserve, { unary }: Calls, maxFileBytes: number) {
  return {
    RepositoryIndex: unary('deploy', async (_, caller) => ({ models: await kserve.as(caller).repositoryIndex() })),
    RepositoryModelLoad: unary('deploy', async (call, caller) => {
      const parameters = call.request.parameters as Record<string, Record<string, unknown>> | undefined;
      await kserve
        .as(caller)
        .load(String(call.request.model_name), readLoadParameters(unwrapParameters(parameters), maxFileBytes));
      return {};
    }),
    RepositoryModelUnload: unary('deploy', async (call, caller) => {
      await kserve.as(caller).unload(String(call.request.model_name));
      return {};
    }),
  };
}
