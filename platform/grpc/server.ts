/**
 * `inference.GRPCInferenceService` over @grpc/grpc-js, from Triton's own .proto files (./proto):
 * health, metadata, ModelInfer (raw and typed contents, classification), model configuration,
 * statistics, the repository extension, and the trace and logging extensions. Calls Hearth does not
 * implement answer UNIMPLEMENTED.
 */
import * as grpc from '@grpc/grpc-js';

import type { GrpcOptions } from './calls.js';
import { callsOf } from './calls.js';
import { inferMethods } from './infer-methods.js';
import { loadInferenceService } from './inference-service.js';
import { keyFirstInterceptor } from './key-first.js';
import { modelMethods, repositoryMethods, serverMethods, sharedMemoryMethods } from './kserve-methods.js';
import { readStartInterceptor } from './read-start.js';
import { settingsMethods } from './settings-methods.js';

export function createGrpcServer(o: GrpcOptions): grpc.Server {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': o.maxMessageBytes,
    'grpc.max_send_message_length': -1,
    // The key first (a call without one is not read), then the traced call's read start.
    interceptors: [keyFirstInterceptor(o.apiKeys), readStartInterceptor(() => o.kserve.tracing())],
  });
  const calls = callsOf(o);
  server.addService(loadInferenceService(), {
    ...serverMethods(o.kserve, calls),
    ...modelMethods(o.kserve, calls),
    ...inferMethods(o, calls),
    ...sharedMemoryMethods(o.kserve, calls),
    ...repositoryMethods(o.kserve, calls, o.maxMessageBytes),
    ...settingsMethods(o.kserve, calls),
  });
  return server;
}

export function bindGrpc(
  server: grpc.Server,
  host: string,
  port: number,
  credentials = grpc.ServerCredentials.createInsecure(),
): Promise<number> {
  return new Promise((resolve, reject) => {
    const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    server.bindAsync(address, credentials, (error, bound) => (error ? reject(error) : resolve(bound)));
  });
}
