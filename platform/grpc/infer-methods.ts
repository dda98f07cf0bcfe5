/**
 * ModelInfer and ModelStreamInfer: each request admitted (Kserve.admit), its tensors read by the
 * gRPC codec (./tensors.ts), answered by the protocol's core. A request the trace settings sample
 * is traced: GRPC_WAITREAD_START when its headers arrived (./read-start.ts; unary calls),
 * GRPC_WAITREAD_END when its message has been read, GRPC_SEND_START and GRPC_SEND_END around its
 * response handed to the HTTP/2 stream.
 */
import type * as grpc from '@grpc/grpc-js';

import type { InferCall, Kserve, ShmContext, Trace } from '../kserve/index.js';
import { parseVersion } from '../registry/index.js';
import type { Calls, GrpcOptions } from './calls.js';
import { readStartOf } from './read-start.js';
import { toGrpcStatus } from './status.js';
import type { GrpcInput, GrpcRequestedOutput } from './tensors.js';
import { grpcInputsToTensors, requestedOutputs, tensorsToGrpcOutputs, unwrapParameters } from './tensors.js';

interface InferRequest {
  model_name: string;
  model_version: string;
  id: string;
  inputs: GrpcInput[];
  outputs: GrpcRequestedOutput[];
  raw_input_contents: Uint8Array[];
  parameters?: Record<string, Record<string, unknown>>;
}

export function inferMethods(o: GrpcOptions, calls: Calls) {
  const shm = o.kserve.sharedMemory;
  // Each call's time of arrival (its message read), and its trace, sampled once its caller is known.
  const reads = new WeakMap<object, bigint>();
  const traces = new WeakMap<object, Trace>();
  const unary = calls.unary('invoke', async (call, caller) => {
    const kserve = o.kserve.as(caller);
    const read = reads.get(call);
    const trace =
      read === undefined
        ? undefined
        : await traced(kserve, call.request.model_name, read, readStartOf(call.metadata, read));
    if (trace) traces.set(call, trace);
    return infer(
      kserve,
      call.request as unknown as InferRequest,
      deadlineOf(call),
      {
        regions: shm,
        owner: caller.key,
      },
      trace,
    );
  });
  const ModelInfer: grpc.handleUnaryCall<Record<string, unknown>, unknown> = (call, callback) => {
    // While nothing traces, a call goes straight through: no time taken, nothing kept, no lookup.
    if (!o.kserve.tracing()) return unary(call, callback);
    reads.set(call, process.hrtime.bigint());
    unary(call, (error, response) => {
      const trace = traces.get(call);
      trace?.capture('GRPC_SEND_START');
      callback(error, response);
      trace?.capture('GRPC_SEND_END');
      trace?.end();
    });
  };
  return { ModelInfer, ModelStreamInfer: streamInfer(o, calls) };
}

/**
 * The request's trace, if sampled — by `kserve`, the caller's view: a model it does not see is
 * never sampled (Kserve.startTrace). GRPC_WAITREAD_START at `start` (where known), _END at `read`,
 * both taken as numbers before. Called only while kserve.tracing().
 */
async function traced(kserve: Kserve, model: unknown, read: bigint, start?: bigint): Promise<Trace | undefined> {
  const trace = await kserve.startTrace(String(model ?? ''));
  if (!trace) return undefined;
  if (start !== undefined) trace.capture('GRPC_WAITREAD_START', start);
  trace.capture('GRPC_WAITREAD_END', read);
  return trace;
}

/** ModelInfer's work, for unary calls and streams alike: each request admitted, then answered. */
async function infer(
  kserve: Kserve,
  r: InferRequest,
  deadline: number | undefined,
  shm: ShmContext,
  trace: Trace | undefined,
) {
  const call: InferCall = {
    model: r.model_name,
    version: parseVersion(r.model_version),
    id: r.id,
    tensors: () => grpcInputsToTensors(r.inputs ?? [], r.raw_input_contents ?? [], shm, r.model_name),
    parameters: unwrapParameters(r.parameters, true),
    outputs: requestedOutputs(r.outputs ?? []),
    deadline,
    shm,
    ...(trace ? { trace } : {}),
  };
  const held = kserve.admit({ deadline });
  if (held) await held;
  const { maxResponseBytes: _, ...answer } = await kserve.infer(call);
  const formatted = tensorsToGrpcOutputs(answer.outputs);
  return { ...answer, id: r.id, outputs: formatted.outputs, raw_output_contents: formatted.raw };
}

/** The call's gRPC deadline, as a performance.now() time. */
function deadlineOf(call: grpc.ServerUnaryCall<unknown, unknown>): number | undefined {
  const deadline = call.getDeadline();
  const ms =
    deadline instanceof Date
      ? deadline.getTime() - Date.now()
      : Number.isFinite(deadline)
        ? Number(deadline) - Date.now()
        : undefined;
  return ms === undefined ? undefined : performance.now() + ms;
}

/**
 * One response per request, in the order they finish, each carrying its request's id; a
 * failed request answers with error_message and the stream goes on.
 */
function streamInfer(o: GrpcOptions, calls: Calls): grpc.handleBidiStreamingCall<Record<string, unknown>, unknown> {
  return (call) => {
    const id = calls.requestId(call);
    let shm: ShmContext;
    let kserve: Kserve;
    try {
      const caller = calls.authorize(call, 'invoke');
      shm = { regions: o.kserve.sharedMemory, owner: caller.key };
      kserve = o.kserve.as(caller);
    } catch (error) {
      call.emit('error', toGrpcStatus(error, { requestId: id, log: o.log }));
      return;
    }
    let open = 0;
    let ended = false;
    const finish = () => {
      if (ended && open === 0) call.end();
    };
    /** One request's answer, written when it finishes. */
    const answer = (request: Record<string, unknown>, trace: Trace | undefined) => {
      const write = (message: object) => {
        trace?.capture('GRPC_SEND_START');
        call.write(message);
        trace?.capture('GRPC_SEND_END');
        trace?.end();
      };
      infer(kserve, request as unknown as InferRequest, undefined, shm, trace)
        .then(
          (response) => write({ error_message: '', infer_response: response }),
          (error: unknown) =>
            write({
              error_message: toGrpcStatus(error, { requestId: id, log: o.log }).details ?? 'internal error',
              infer_response: { id: String(request.id ?? ''), model_name: String(request.model_name ?? '') },
            }),
        )
        .finally(() => {
          open--;
          finish();
        });
    };
    call.on('data', (request: Record<string, unknown>) => {
      open++;
      if (!kserve.tracing()) answer(request, undefined);
      // A trace that cannot start leaves the request untraced, not unanswered (and the stream open).
      else
        void traced(kserve, request.model_name, process.hrtime.bigint()).then(
          (trace) => answer(request, trace),
          () => answer(request, undefined),
        );
    });
    call.on('end', () => {
      ended = true;
      finish();
    });
    call.on('error', () => undefined);
  };
}
