/**
 * KServe infer over HTTP (`POST /v2/models/{name}[/versions/{v}]/infer`): the body's limits, HTTP's
 * codec (../kserve-body.ts) in and out, and the protocol's core (../../kserve) between them.
 */
import { PayloadTooLargeError } from '../../../sdk/errors.js';
import type { Kserve } from '../../kserve/index.js';
import { refuseFormBody } from '../json-body.js';
import { formatInferResponse, parseInferRequest, requestedOutputs } from '../kserve-body.js';
import type { Handler } from './request.js';
import { deadlineOf } from './request.js';

export interface KserveInferOptions {
  /** The KServe protocol's core: infer, and the caller's shared memory regions. */
  kserve: Kserve;
  /** Largest JSON of a KServe request (default 32 MiB), refused with 413 before it is parsed. */
  maxJsonBytes?: number;
  /** No API key, loopback bind (Config.loopbackGuard): form and text/plain bodies are refused. */
  loopbackGuard?: boolean;
}

/** The infer route's handler: a call already admitted, its body read whole. */
export function kserveInfer(o: KserveInferOptions): Handler {
  return async (call) => {
    refuseFormBody(o.loopbackGuard === true, call.header);
    const header = call.header('inference-header-content-length');
    const jsonBytes = header === undefined ? call.body.byteLength : Number(header);
    const maxJson = o.maxJsonBytes ?? 32 * 2 ** 20;
    if (jsonBytes > maxJson)
      throw new PayloadTooLargeError(
        `the request's JSON is ${jsonBytes} bytes, over the limit of ${maxJson} (HEARTH_MAX_JSON_BYTES); send large tensors as binary data (Inference-Header-Content-Length)`,
      );
    const shm = { regions: o.kserve.sharedMemory, owner: call.caller.key };
    const { request, tensors } = await parseInferRequest(
      call.body,
      header === undefined ? undefined : Number(header),
      shm,
    );
    const answer = await o.kserve.as(call.caller).infer({
      model: call.name,
      version: call.version,
      id: request.id,
      tensors: () => tensors,
      parameters: request.parameters as Record<string, unknown> | undefined,
      outputs: requestedOutputs(request),
      deadline: deadlineOf(call.header),
      signal: call.signal,
      shm,
      ...(call.trace ? { trace: call.trace } : {}),
    });
    const out = formatInferResponse(request, answer);
    const headers: Record<string, string> = { 'content-type': out.contentType };
    if (out.headerLength !== undefined) headers['inference-header-content-length'] = String(out.headerLength);
    return { status: 200, headers, body: out.body };
  };
}
