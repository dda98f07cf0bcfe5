/**
 * ModelInfer over gRPC (Triton's inference.GRPCInferenceService, from its own .proto files) with
 * @grpc/grpc-js: one channel, calls multiplexed on it as Triton's clients share theirs. Loaded only
 * for `--protocol grpc`. The .proto files are found beside the bundled CLI (proto/) or in the
 * checkout (platform/grpc/proto).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

import type { Sender } from './http-target.js';

/** Where grpc_service.proto may be: HEARTH_PROTO_DIR, beside the bundle, or the checkout's. */
function protoDir(): string {
  const candidates = [
    process.env.HEARTH_PROTO_DIR,
    fileURLToPath(new URL('./proto', import.meta.url)),
    fileURLToPath(new URL('../../platform/grpc/proto', import.meta.url)),
  ].filter((d): d is string => d !== undefined);
  const found = candidates.find((d) => existsSync(`${d}/grpc_service.proto`));
  if (!found)
    throw new Error(
      `gRPC needs Triton's grpc_service.proto: set HEARTH_PROTO_DIR to its folder (looked in ${candidates.join(', ')})`,
    );
  return found;
}

type Infer = (
  request: object,
  meta: grpc.Metadata,
  options: grpc.CallOptions,
  done: (error: grpc.ServiceError | null) => void,
) => void;

export interface GrpcTargetOptions {
  address: string;
  model: string;
  version?: number;
  inputs: { name: string; datatype: string }[];
  /** Each request's shapes and raw input bytes, in the inputs' order (cycled). */
  requests: { shapes: number[][]; raw: Uint8Array[] }[];
  apiKey?: string;
  /** TLS (the node's URL is https): with the CA, client certificate and key when given. */
  secure: boolean;
  tls?: { ca?: string; cert?: string; key?: string };
  timeoutMs: number;
}

const MAX_MESSAGE = 64 * 2 ** 20;

export function grpcTarget(o: GrpcTargetOptions): Sender {
  const dir = protoDir();
  const definition = protoLoader.loadSync(`${dir}/grpc_service.proto`, {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs: [dir],
  });
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    inference: { GRPCInferenceService: grpc.ServiceClientConstructor };
  };
  const pem = (text: string | undefined) => (text ? Buffer.from(text) : null);
  const credentials = o.secure
    ? grpc.credentials.createSsl(pem(o.tls?.ca), pem(o.tls?.key), pem(o.tls?.cert))
    : grpc.credentials.createInsecure();
  const client = new pkg.inference.GRPCInferenceService(o.address, credentials, {
    'grpc.max_receive_message_length': MAX_MESSAGE,
    'grpc.max_send_message_length': MAX_MESSAGE,
  });
  const infer = (client as unknown as { ModelInfer: Infer }).ModelInfer.bind(client);
  const requests = o.requests.map((r) => ({
    model_name: o.model,
    model_version: o.version === undefined ? '' : String(o.version),
    inputs: o.inputs.map((i, k) => ({ name: i.name, datatype: i.datatype, shape: r.shapes[k] })),
    raw_input_contents: r.raw.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength)),
  }));
  const meta = new grpc.Metadata();
  if (o.apiKey) meta.set('authorization', `Bearer ${o.apiKey}`);
  return {
    send(index, done) {
      infer(requests[index % requests.length]!, meta, { deadline: Date.now() + o.timeoutMs }, (error) =>
        error ? done(grpc.status[error.code] ?? String(error.code), error.details) : done(undefined),
      );
    },
    close: async () => client.close(),
  };
}
