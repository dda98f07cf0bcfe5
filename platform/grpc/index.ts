export { bindGrpc, createGrpcServer, loadInferenceService, PROTO_OPTIONS, PROTO_PATH } from './server.js';
export type { GrpcOptions } from './server.js';
