/**
 * GRPC_WAITREAD_START of a traced ModelInfer: grpc-js reads a call's message before its method runs,
 * so the call's start is taken here, in a server interceptor, when its headers arrive, and handed
 * to the method beside its metadata. Only while some trace setting traces: otherwise the interceptor
 * passes the call on untouched and costs nothing.
 */
import * as grpc from '@grpc/grpc-js';

/**
 * Each intercepted call's start, by the metadata object grpc-js hands its method (the same object
 * the interceptor passes on): no header a client sends can stand for it (a metadata key could, and
 * was, forged — `hearth-trace-read-start: 42` became a trace's GRPC_WAITREAD_START).
 */
const starts = new WeakMap<grpc.Metadata, bigint>();
const MODEL_INFER = '/inference.GRPCInferenceService/ModelInfer';

export function readStartInterceptor(tracing: () => boolean): grpc.ServerInterceptor {
  return (method, call) => {
    // Passed on as it is (grpc-js only calls the interface's methods; its type asks for the class).
    if (method.path !== MODEL_INFER || !tracing()) return call as grpc.ServerInterceptingCall;
    const at = process.hrtime.bigint();
    return new grpc.ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, pass) => {
            starts.set(metadata, at);
            pass(metadata);
          },
        }),
    });
  };
}

/** The call's start, as the interceptor took it (a time not after `read`), else none. */
export function readStartOf(metadata: grpc.Metadata, read: bigint): bigint | undefined {
  const at = starts.get(metadata);
  return at !== undefined && at <= read ? at : undefined;
}
