/**
 * What every call of the service does the same way at its edges: its request id, answered in its
 * initial metadata; the caller's API key, from its metadata; and a failure mapped to its status once
 * (./status.ts), its detail to the function's own log.
 */
import * as grpc from '@grpc/grpc-js';

import type { Caller, Scope } from '../caller/index.js';
import { authorize as authorizeKey, NO_KEYS, requestIdOf } from '../caller/index.js';
import type { ApiKey } from '../config/index.js';
import type { ServingFunctions } from '../functions/serving.js';
import { logsTo } from '../functions/tenant-view.js';
import type { Kserve } from '../kserve/index.js';
import type { Logger } from '../log/index.js';
import { toGrpcStatus } from './status.js';

export interface GrpcOptions {
  /** Where a failed call's detail is logged (the function's log, where the caller sees it). */
  service: Pick<ServingFunctions, 'errorDetail' | 'get'>;
  /** The KServe protocol's core: every method of the service is a codec over it. */
  kserve: Kserve;
  apiKeys: ApiKey[];
  maxMessageBytes: number;
  /** Where unexpected errors and the detail of errors go (the `grpc` component's logger). */
  log?: Logger;
}

/** A unary method's work, given its call and its caller. */
export type Handler = (
  call: grpc.ServerUnaryCall<Record<string, unknown>, unknown>,
  caller: Caller,
) => Promise<unknown>;

export interface Calls {
  /** The caller, by its key in the authorization (or x-api-key) metadata (none needed: NO_KEYS). */
  authorize(call: { metadata: grpc.Metadata }, scope: Scope | 'none'): Caller;
  /** The call's request id (x-request-id metadata, as on HTTP), answered in its initial metadata. */
  requestId(call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerDuplexStream<unknown, unknown>): string;
  /** A unary method: its request id, then the caller's key of `scope`, then `handler`; a failure as its status. */
  unary(scope: Scope | 'none', handler: Handler): grpc.handleUnaryCall<Record<string, unknown>, unknown>;
}

export function callsOf(o: GrpcOptions): Calls {
  const calls: Calls = {
    authorize: (call, scope) => {
      if (scope === 'none') return NO_KEYS;
      return authorizeKey(o.apiKeys, scope, headerOf(call.metadata));
    },
    requestId: (call) => {
      const given = call.metadata.get('x-request-id')[0];
      const id = requestIdOf({ 'x-request-id': typeof given === 'string' ? given : undefined });
      const md = new grpc.Metadata();
      md.set('x-request-id', id);
      call.sendMetadata(md);
      return id;
    },
    unary: (scope, handler) => (call, callback) => {
      const id = calls.requestId(call);
      let caller: Caller | undefined;
      Promise.resolve()
        .then(() => {
          caller = calls.authorize(call, scope);
          return handler(call, caller);
        })
        .then(
          (response) => callback(null, response),
          async (error: unknown) => {
            // The detail goes to the function's log only where the caller sees the function.
            const model = call.request.model_name;
            const fn = await logsTo(caller, o.service, typeof model === 'string' ? model : undefined);
            const onDetail = o.service.errorDetail(fn, id);
            callback(toGrpcStatus(error, { requestId: id, log: o.log, onDetail }) as grpc.ServiceError);
          },
        );
    },
  };
  return calls;
}

/** A call's text header by name, as the key checks read it (a binary `-bin` value is no header of theirs). */
export function headerOf(metadata: grpc.Metadata): (name: string) => string | undefined {
  return (name) => {
    const value = metadata.get(name)[0];
    return typeof value === 'string' ? value : undefined;
  };
}
