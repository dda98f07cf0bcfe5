/**
 * `inference.GRPCInferenceService` over @grpc/grpc-js, from Triton's own .proto files (./proto):
 * health, metadata, ModelInfer (raw and typed contents, classification), model configuration,
 * statistics and the repository extension. Calls Hearth does not implement answer UNIMPLEMENTED.
 */
import { fileURLToPath } from 'node:url';

import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

import type { ApiKey } from '../config.js';
import type { Logger } from '../log.js';
import { requestIdOf } from '../caller/index.js';
import type { ServingFunctions } from '../functions/serving.js';
import type { InferCall, Kserve, ShmContext } from '../kserve/index.js';
import { cudaSharedMemoryUnsupported, readLoadParameters } from '../kserve/index.js';
import type { Scope } from '../caller/index.js';
import { authorize as authorizeKey } from '../caller/index.js';
import { parseVersion } from '../registry/index.js';
import { toGrpcStatus } from './status.js';
import type { GrpcInput, GrpcRequestedOutput } from './tensors.js';
import { grpcInputsToTensors, requestedOutputs, tensorsToGrpcOutputs, unwrapParameters } from './tensors.js';

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

export interface GrpcOptions {
  /** Where a failed call's detail is logged. */
  service: Pick<ServingFunctions, 'errorDetail'>;
  /** The KServe protocol's core: every method of the service is a codec over it. */
  kserve: Kserve;
  apiKeys: ApiKey[];
  maxMessageBytes: number;
  /** Where unexpected errors and the detail of errors go (the `grpc` component's logger). */
  log?: Logger;
}

interface InferRequest {
  model_name: string;
  model_version: string;
  id: string;
  inputs: GrpcInput[];
  outputs: GrpcRequestedOutput[];
  raw_input_contents: Uint8Array[];
  parameters?: Record<string, Record<string, unknown>>;
}
type Handler = (call: grpc.ServerUnaryCall<Record<string, unknown>, unknown>) => Promise<unknown>;

export function createGrpcServer(o: GrpcOptions): grpc.Server {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': o.maxMessageBytes,
    'grpc.max_send_message_length': -1,
  });
  const { service, kserve } = o;
  const shm = kserve.sharedMemory;

  /** The caller's key ('' with none configured), from the authorization (or x-api-key) metadata. */
  const authorize = (call: { metadata: grpc.Metadata }, scope: Scope | 'none'): string => {
    if (scope === 'none') return '';
    return authorizeKey(o.apiKeys, scope, (name) => {
      const value = call.metadata.get(name)[0];
      return value === undefined ? undefined : String(value);
    });
  };
  const shmOf = (call: { metadata: grpc.Metadata }): ShmContext => ({ regions: shm, owner: authorize(call, 'invoke') });

  /** The call's request id (x-request-id metadata, as on HTTP), answered in its initial metadata. */
  const requestId = (call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerDuplexStream<unknown, unknown>) => {
    const given = call.metadata.get('x-request-id')[0];
    const id = requestIdOf({ 'x-request-id': typeof given === 'string' ? given : undefined });
    const md = new grpc.Metadata();
    md.set('x-request-id', id);
    call.sendMetadata(md);
    return id;
  };

  const unary =
    (scope: Scope | 'none', handler: Handler): grpc.handleUnaryCall<Record<string, unknown>, unknown> =>
    (call, callback) => {
      const id = requestId(call);
      Promise.resolve()
        .then(() => authorize(call, scope))
        .then(() => handler(call))
        .then(
          (response) => callback(null, response),
          (error: unknown) => {
            const fn = call.request.model_name;
            const onDetail = service.errorDetail(typeof fn === 'string' ? fn : undefined, id);
            callback(toGrpcStatus(error, { requestId: id, log: o.log, onDetail }) as grpc.ServiceError);
          },
        );
    };

  /** ModelInfer's work, for unary calls and streams alike: each request admitted, then answered. */
  const infer = async (r: InferRequest, deadline: number | undefined, shm: ShmContext) => {
    const call: InferCall = {
      model: r.model_name,
      version: parseVersion(r.model_version),
      id: r.id,
      tensors: () => grpcInputsToTensors(r.inputs ?? [], r.raw_input_contents ?? [], shm, r.model_name),
      parameters: unwrapParameters(r.parameters, true),
      outputs: requestedOutputs(r.outputs ?? []),
      deadline,
      shm,
    };
    const held = kserve.admit({ deadline });
    if (held) await held;
    const answer = await kserve.infer(call);
    const formatted = tensorsToGrpcOutputs(answer.outputs);
    return { ...answer, id: r.id, outputs: formatted.outputs, raw_output_contents: formatted.raw };
  };

  server.addService(loadInferenceService(), {
    ServerLive: unary('none', async () => ({ live: true })),
    ServerReady: unary('none', async () => ({ ready: kserve.ready() })),
    ModelReady: unary('invoke', async (call) => ({
      ready: await kserve.modelReady(String(call.request.name), String(call.request.version ?? '')),
    })),
    ServerMetadata: unary('invoke', async () => kserve.serverMetadata()),
    ModelMetadata: unary('invoke', async (call) =>
      kserve.modelMetadata(String(call.request.name), String(call.request.version ?? '')),
    ),
    ModelInfer: unary('invoke', async (call) => {
      const deadline = call.getDeadline();
      const ms =
        deadline instanceof Date
          ? deadline.getTime() - Date.now()
          : Number.isFinite(deadline)
            ? Number(deadline) - Date.now()
            : undefined;
      return infer(
        call.request as unknown as InferRequest,
        ms === undefined ? undefined : performance.now() + ms,
        shmOf(call),
      );
    }),
    // One response per request, in the order they finish, each carrying its request's id; a
    // failed request answers with error_message and the stream goes on.
    ModelStreamInfer: (call: grpc.ServerDuplexStream<Record<string, unknown>, unknown>) => {
      const id = requestId(call);
      let shm: ShmContext;
      try {
        shm = shmOf(call);
      } catch (error) {
        call.emit('error', toGrpcStatus(error, { requestId: id, log: o.log }));
        return;
      }
      let open = 0;
      let ended = false;
      const finish = () => {
        if (ended && open === 0) call.end();
      };
      call.on('data', (request: Record<string, unknown>) => {
        open++;
        infer(request as unknown as InferRequest, undefined, shm)
          .then(
            (response) => call.write({ error_message: '', infer_response: response }),
            (error: unknown) =>
              call.write({
                error_message: toGrpcStatus(error, { requestId: id, log: o.log }).details ?? 'internal error',
                infer_response: { id: String(request.id ?? ''), model_name: String(request.model_name ?? '') },
              }),
          )
          .finally(() => {
            open--;
            finish();
          });
      });
      call.on('end', () => {
        ended = true;
        finish();
      });
      call.on('error', () => undefined);
    },
    ModelConfig: unary('invoke', async (call) => ({
      config: await kserve.modelConfig(String(call.request.name), String(call.request.version ?? '')),
    })),
    ModelStatistics: unary('invoke', async (call) =>
      kserve.statistics(String(call.request.name ?? ''), String(call.request.version ?? '')),
    ),
    RepositoryIndex: unary('admin', async () => ({ models: await kserve.repositoryIndex() })),
    SystemSharedMemoryStatus: unary('invoke', async (call) => {
      const regions = shm.status(authorize(call, 'invoke'), String(call.request.name ?? ''));
      return { regions: Object.fromEntries(regions.map((r) => [r.name, r])) };
    }),
    SystemSharedMemoryRegister: unary('shm', async (call) => {
      shm.register(authorize(call, 'shm'), String(call.request.name ?? ''), call.request);
      return {};
    }),
    SystemSharedMemoryUnregister: unary('invoke', async (call) => {
      shm.unregister(authorize(call, 'invoke'), String(call.request.name ?? ''));
      return {};
    }),
    CudaSharedMemoryStatus: unary('invoke', async () => ({ regions: {} })),
    CudaSharedMemoryRegister: unary('invoke', async () => cudaSharedMemoryUnsupported()),
    CudaSharedMemoryUnregister: unary('invoke', async () => ({})),
    RepositoryModelLoad: unary('admin', async (call) => {
      const parameters = call.request.parameters as Record<string, Record<string, unknown>> | undefined;
      await kserve.load(String(call.request.model_name), readLoadParameters(unwrapParameters(parameters)));
      return {};
    }),
    RepositoryModelUnload: unary('admin', async (call) => {
      await kserve.unload(String(call.request.model_name));
      return {};
    }),
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
