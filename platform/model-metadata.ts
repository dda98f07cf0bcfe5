/** KServe v2 model metadata, the same on HTTP and gRPC. */
import type { FunctionSpec } from '../sdk/spec/function-spec.js';

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
