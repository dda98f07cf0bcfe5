/**
 * The KServe v2 / Open Inference Protocol and Triton's extensions as one transport-neutral core
 * (./protocol.ts); HTTP (../http) and gRPC (../grpc) are codecs over it.
 */

export type { Admit } from './admission.js';
export type { AnsweredOutput, InferAnswer, InferCall, InputContent, RequestInput } from './infer.js';
export { requestTensors } from './infer.js';
export { parseInferJson, parseJson } from './json.js';
export type { LogSettingsAnswer, LogUpdate, LogValue } from './logging.js';
export { cudaSharedMemoryUnsupported } from './metadata.js';
export type { KserveOptions } from './protocol.js';
export { Kserve } from './protocol.js';
export type { LoadRequest } from './repository.js';
export { readLoadParameters } from './repository.js';
export { clip } from './setting-bounds.js';
export type { RegionStatus, ShmContext } from './shared-memory.js';
export { SharedMemoryRegions } from './shared-memory.js';
export type { RequestedOutput } from './tensors.js';
export type { Trace, TraceSettingsAnswer, TraceUpdate } from './trace/index.js';
export { TRACE_DEFAULTS, TraceFile, Tracer } from './trace/index.js';
