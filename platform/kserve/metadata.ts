/** KServe v2 server and model metadata, the same on HTTP and gRPC. */
import { UnsupportedError } from '../../sdk/errors.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';

/** The extensions this node implements (system shared memory only where it is on). */
export function serverExtensions(systemSharedMemory: boolean): string[] {
  return [
    'classification',
    'model_repository',
    'model_configuration',
    'statistics',
    'binary_tensor_data',
    'trace',
    'logging',
    ...(systemSharedMemory ? ['system_shared_memory'] : []),
  ];
}

/** Model metadata: shapes with the batch dimension as -1 when the model has one. */
export function modelMetadata(spec: FunctionSpec, versions: number[]): object {
  const shape = (dims: number[]) => (spec.maxBatchSize > 0 ? [-1, ...dims] : dims);
  return {
    name: spec.name,
    versions: versions.map(String),
    platform: 'pytorch_libtorch',
    inputs: spec.inputs.map((i) => ({ name: i.name, datatype: i.dtype, shape: shape(i.dims) })),
    outputs: spec.outputs.map((o) => ({ name: o.name, datatype: o.dtype, shape: shape(o.dims) })),
  };
}

/** CUDA shared memory needs a CUDA device and a CUDA build; until then every register says so. */
export function cudaSharedMemoryUnsupported(): never {
  throw new UnsupportedError(
    'CUDA shared memory is not supported on this node: it has no CUDA device (use system shared memory, or send tensors in the request)',
  );
}
