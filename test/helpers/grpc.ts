/** A gRPC client of `inference.GRPCInferenceService` made from Hearth's .proto, as Triton's generated clients are. */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

import { PROTO_OPTIONS, PROTO_PATH } from '../../platform/grpc/index.js';

export type InferenceClient = grpc.Client &
  Record<
    string,
    (req: object, meta: grpc.Metadata, cb: (e: grpc.ServiceError | null, r: Record<string, unknown>) => void) => void
  >;

export function inferenceClient(address: string): InferenceClient {
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(PROTO_PATH, PROTO_OPTIONS)) as unknown as {
    inference: { GRPCInferenceService: grpc.ServiceClientConstructor };
  };
  return new pkg.inference.GRPCInferenceService(
    address,
    grpc.credentials.createInsecure(),
  ) as unknown as InferenceClient;
}

/** One unary call; `key` goes in the authorization metadata. */
export function grpcCall(
  c: InferenceClient,
  method: string,
  request: object,
  key?: string,
): Promise<Record<string, unknown>> {
  const meta = new grpc.Metadata();
  if (key) meta.set('authorization', `Bearer ${key}`);
  return new Promise((resolve, reject) =>
    c[method]!(request, meta, (error, response) => (error ? reject(error) : resolve(response))),
  );
}

/** A ModelStreamInfer stream: write requests, end(), then await `done` for every response. */
export function inferStream(c: InferenceClient): {
  stream: grpc.ClientDuplexStream<object, Record<string, unknown>>;
  responses: Record<string, unknown>[];
  done: Promise<void>;
} {
  const stream = (
    c as unknown as { ModelStreamInfer(meta: grpc.Metadata): grpc.ClientDuplexStream<object, Record<string, unknown>> }
  ).ModelStreamInfer(new grpc.Metadata());
  const responses: Record<string, unknown>[] = [];
  const done = new Promise<void>((resolve, reject) => {
    stream.on('data', (r: Record<string, unknown>) => responses.push(r));
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  return { stream, responses, done };
}
