/** A gRPC client of `inference.GRPCInferenceService` made from Hearth's .proto, as Triton's generated clients are. */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

import { PROTO_OPTIONS, PROTO_PATH } from '../../platform/grpc/server.js';

export type InferenceClient = grpc.Client & Record<string, (req: object, meta: grpc.Metadata, cb: (e: grpc.ServiceError | null, r: Record<string, unknown>) => void) => void>;

export function inferenceClient(address: string): InferenceClient {
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(PROTO_PATH, PROTO_OPTIONS)) as unknown as { inference: { GRPCInferenceService: grpc.ServiceClientConstructor } };
  return new pkg.inference.GRPCInferenceService(address, grpc.credentials.createInsecure()) as unknown as InferenceClient;
}

/** One unary call; `key` goes in the authorization metadata. */
export function grpcCall(c: InferenceClient, method: string, request: object, key?: string): Promise<Record<string, unknown>> {
  const meta = new grpc.Metadata();
  if (key) meta.set('authorization', `Bearer ${key}`);
  return new Promise((resolve, reject) => c[method]!(request, meta, (error, response) => (error ? reject(error) : resolve(response))));
}
