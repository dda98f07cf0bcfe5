/**
 * KServe v2 over gRPC (Triton's `inference.GRPCInferenceService`): the server (./server.ts), a codec
 * over the protocol's core (../kserve), and the service's definition for clients and tests.
 */
export type { GrpcOptions } from './calls.js';
export { loadInferenceService, PROTO_OPTIONS, PROTO_PATH } from './inference-service.js';
export { bindGrpc, createGrpcServer } from './server.js';
