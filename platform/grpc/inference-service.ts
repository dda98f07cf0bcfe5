/** `inference.GRPCInferenceService`'s definition, from Triton's own .proto files (./proto). */
import { fileURLToPath } from 'node:url';

import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/** Triton's own grpc_service.proto and model_config.proto, unchanged (./proto, with their licence). */
export const PROTO_PATH = fileURLToPath(new URL('./proto/grpc_service.proto', import.meta.url));

export const PROTO_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [fileURLToPath(new URL('./proto', import.meta.url))],
};

export function loadInferenceService(): grpc.ServiceDefinition {
  const definition = protoLoader.loadSync(PROTO_PATH, PROTO_OPTIONS);
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    inference: { GRPCInferenceService: grpc.ServiceClientConstructor };
  };
  return pkg.inference.GRPCInferenceService.service;
}
