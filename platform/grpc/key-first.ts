/**
 * A call that names no key the node knows is refused when its headers arrive, before its message is
 * read: grpc-js reads and decodes a call's message (up to the node's message limit) before its
 * method runs, so without this a caller with no key had the node parse megabytes — a 10 MiB map of
 * 600k keys held the event loop 4.8 s — to be told UNAUTHENTICATED. Each method still checks the
 * key's scope; health (ServerLive, ServerReady) needs none.
 */
import * as grpc from '@grpc/grpc-js';

import { UnauthenticatedError } from '../../sdk/errors.js';
import { keyOf, SEND_A_KEY } from '../caller/index.js';
import type { ApiKey } from '../config/index.js';
import { headerOf } from './calls.js';
import { toGrpcStatus } from './status.js';

const OPEN = new Set(['/inference.GRPCInferenceService/ServerLive', '/inference.GRPCInferenceService/ServerReady']);

export function keyFirstInterceptor(keys: readonly ApiKey[]): grpc.ServerInterceptor {
  return (method, call) => {
    // Passed on as it is (grpc-js only calls the interface's methods; its type asks for the class).
    if (keys.length === 0 || OPEN.has(method.path)) return call as grpc.ServerInterceptingCall;
    const intercepting: grpc.ServerInterceptingCall = new grpc.ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, pass) => {
            if (keyOf(keys, headerOf(metadata))) return pass(metadata);
            // Not passed on: the method never starts, and the stream is never read.
            const { code, details } = toGrpcStatus(new UnauthenticatedError(SEND_A_KEY));
            intercepting.sendStatus({ code: code!, details: details!, metadata: new grpc.Metadata() });
          },
        }),
    });
    return intercepting;
  };
}
