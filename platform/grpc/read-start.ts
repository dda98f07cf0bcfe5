/**
 * GRPC_WAITREAD_START of a traced ModelInfer: grpc-js reads a call's message before its method runs,
 * so the call's start is taken here, in a server interceptor, when its headers arrive, and handed
 * to the method in its metadata. Only while some trace setting traces: otherwise the interceptor
 * passes the call on untouched and costs nothing.
 */
import * as grpc from '@grpc/grpc-js';

/** The metadata key the start travels under (a client's own value is overwritten, or ignored). */
const READ_START = 'hearth-trace-read-start';
const MODEL_INFER = '/inference.GRPCInferenceService/ModelInfer';

export function readStartInterceptor(tracing: () => boolean): grpc.ServerInterceptor {
  return (method, call) => {
    // Passed on as it is (grpc-js only calls the interface's methods; its type asks for the class).
    if (method.path !== MODEL_INFER || !tracing()) return call as grpc.ServerInterceptingCall;
    const at = String(process.hrtime.bigint());
    return new grpc.ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, pass) => {
            metadata.set(READ_START, at);
            pass(metadata);
          },
        }),
    });
  };
}

/** The call's start, as the interceptor stamped it: a time not after `read`, else none. */
export function readStartOf(metadata: grpc.Metadata, read: bigint): bigint | undefined {
  const value = metadata.get(READ_START)[0];
  if (typeof value !== 'string' || !/^\d{1,20}$/.test(value)) return undefined;
  const at = BigInt(value);
  return at <= read ? at : undefined;
}
