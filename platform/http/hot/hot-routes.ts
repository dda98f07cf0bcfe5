/**
 * The hot routes — function URLs (`POST /fn/{name}[/versions/{v}]`) and KServe infer
 * (`POST /v2/models/{name}[/versions/{v}]/infer`) — served on node:http directly. hono's fetch
 * adapter builds a WHATWG Request, a ReadableStream over the body, an AbortSignal and a Response per
 * request; on these routes that was most of the event loop's time per request (see
 * docs/benchmarks.md). Everything else stays on hono (../app.ts). Same keys, limits and error mapping.
 *
 * A hot request, in order: the caller's key, admission (Kserve.admit: held while the node starts,
 * refused while it stops), the path's name and version, the body read whole and inflated, the
 * route's answer (./function-urls.ts, ./kserve-infer.ts), compressed when asked, written out.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import type { Caller } from '../../caller/index.js';
import { authorize } from '../../caller/index.js';
import type { ApiKey } from '../../config/index.js';
import type { ServingFunctions } from '../../functions/serving.js';
import { logsTo } from '../../functions/tenant-view.js';
import type { JobQueue } from '../../jobs/index.js';
import type { Kserve, Trace } from '../../kserve/index.js';
import type { Logger } from '../../log/index.js';
import { parseVersion } from '../../registry/index.js';
import { BodyBuffers } from './body-buffers.js';
import { decodeBody, encodeReply } from './content-coding.js';
import { functionUrls, submitsJob } from './function-urls.js';
import { kserveInfer } from './kserve-infer.js';
import { readBody } from './read-body.js';
import { fail, send } from './reply.js';
import type { Handler, Reply } from './request.js';
import { deadlineOf, decode, safeDecode } from './request.js';

export interface HotRouteOptions {
  service: ServingFunctions;
  /** The KServe protocol's core: admission, infer, and the caller's shared memory regions. */
  kserve: Kserve;
  jobs: JobQueue;
  apiKeys: ApiKey[];
  maxBodyBytes: number;
  /** Largest JSON of a KServe request (default 32 MiB), refused with 413 before it is parsed. */
  maxJsonBytes?: number;
  /** False while the node starts or drains: connections close after their response. */
  ready: () => boolean;
  inflight?: { enter(): void; leave(): void };
  /** No API key, loopback bind (Config.loopbackGuard): form and text/plain bodies are refused. */
  loopbackGuard?: boolean;
  /** Where unexpected errors and the detail of errors go (the `http` component's logger). */
  log?: Logger;
}

const FN = /^\/fn\/([^/]+)(?:\/versions\/([^/]+))?$/;
/** Most calls carry no query string: they share this (only ever read) one. */
const NO_QUERY = new URLSearchParams();
const INFER = /^\/v2\/models\/([^/]+)(?:\/versions\/([^/]+))?\/infer$/;

/** A request that matched a hot route. */
interface Route {
  /** The path's match: the name's segment, then the version's, if any. */
  match: RegExpExecArray;
  /** A function URL (else KServe infer). */
  fn: boolean;
  handler: Handler;
  /** The query string, after its `?` (undefined with none). */
  search: string | undefined;
}

/** One hot request while it is served: how far it got decides how a refusal is written. */
interface Served {
  req: IncomingMessage;
  route: Route;
  header: (name: string) => string | undefined;
  signal: AbortSignal;
  /** Read whole: a refusal after it keeps the connection. */
  bodyRead: boolean;
  /** The body, when it came in one of the routes' buffers: given back once the reply is written. */
  pooled?: Uint8Array;
  /** Who sent it, once its key is known. */
  caller?: Caller;
  /**
   * When it arrived (process.hrtime), taken only for a KServe infer while some setting traces (none
   * is sampled otherwise), and its trace where the trace settings sampled it.
   */
  received: bigint | undefined;
  trace?: Trace;
  /** The response closed (written out, or the client hung up). */
  closed: boolean;
}

export function createHotRoutes(o: HotRouteOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const handlers = { fn: functionUrls(o), infer: kserveInfer(o) };
  const bodyBuffers = new BodyBuffers();
  return (req, res) => {
    const route = routeOf(req, handlers);
    if (!route) return false;

    o.inflight?.enter();
    const controller = new AbortController();
    const header = (name: string): string | undefined => {
      const v = req.headers[name];
      return Array.isArray(v) ? v.join(', ') : v;
    };
    const served: Served = {
      req,
      route,
      header,
      signal: controller.signal,
      bodyRead: false,
      received: !route.fn && o.kserve.tracing() ? process.hrtime.bigint() : undefined,
      closed: false,
    };
    res.once('close', () => {
      served.closed = true;
      if (!res.writableFinished) controller.abort();
      o.inflight?.leave();
    });
    serve(o, bodyBuffers, served).then(
      (reply) => {
        sending(served, res);
        send(o, res, reply);
        // Answered and written out: nothing holds the body now. (On any failure it is left to GC.)
        const body = served.pooled;
        if (body)
          res.once('finish', () => bodyBuffers.give(body.buffer as ArrayBuffer, body.byteOffset + body.byteLength));
      },
      // A request refused before its body was read closes its connection: the unread body is not
      // drained, so nothing over the limit is ever buffered.
      // The detail goes to the function's log only where the caller sees the function.
      (error: unknown) =>
        void logsTo(served.caller, o.service, safeDecode(route.match[1]!)).then((fn) => {
          sending(served, res);
          fail(o, res, error, !served.bodyRead, header('x-request-id'), fn);
        }),
    );
    return true;
  };
}

/**
 * A traced request's HTTP_SEND_START now, its HTTP_SEND_END once written out; then its trace is
 * written — at once where the client hung up before its answer (its response closed already).
 */
function sending(s: Served, res: ServerResponse): void {
  const { trace } = s;
  if (!trace) return;
  if (s.closed) {
    trace.end();
    return;
  }
  trace.capture('HTTP_SEND_START');
  res.once('close', () => {
    if (res.writableFinished) trace.capture('HTTP_SEND_END');
    trace.end();
  });
}

/** The hot route a request is for, or undefined (hono's app answers it). */
function routeOf(req: IncomingMessage, handlers: { fn: Handler; infer: Handler }): Route | undefined {
  if (req.method !== 'POST') return undefined;
  const url = req.url ?? '';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const fn = FN.exec(path);
  const match = fn ?? INFER.exec(path);
  if (!match) return undefined;
  return {
    match,
    fn: fn !== null,
    handler: fn ? handlers.fn : handlers.infer,
    search: q === -1 ? undefined : url.slice(q + 1),
  };
}

/** A hot request's answer, from the caller's key to the reply, compressed when asked. */
async function serve(o: HotRouteOptions, bodyBuffers: BodyBuffers, s: Served): Promise<Reply> {
  const { route, header } = s;
  const caller = authorize(o.apiKeys, 'invoke', header);
  s.caller = caller;
  const held = o.kserve.admit({ deadline: deadlineOf(header), signal: s.signal });
  if (held) await held;
  const name = decode(route.match[1]!);
  const version = parseVersion(route.match[2] === undefined ? undefined : decode(route.match[2]));
  // Sampled (spending a setting's trace_count) only once the name resolves in the caller's view;
  // its arrival, taken as a number, becomes its HTTP_RECV_START.
  if (s.received !== undefined) {
    s.trace = await o.kserve.as(caller).startTrace(name);
    s.trace?.capture('HTTP_RECV_START', s.received);
  }
  const query = route.search === undefined ? NO_QUERY : new URLSearchParams(route.search);
  const body = await readWhole(o, bodyBuffers, s, query);
  s.trace?.capture('HTTP_RECV_END');
  const reply = await route.handler({
    name,
    version,
    query,
    header,
    body,
    signal: s.signal,
    caller,
    ...(s.trace ? { trace: s.trace } : {}),
  });
  return encodeReply(reply, header('accept-encoding'));
}

/** The request's body, read whole and inflated (marking `s` read, and pooled where it is). */
async function readWhole(
  o: HotRouteOptions,
  bodyBuffers: BodyBuffers,
  s: Served,
  query: URLSearchParams,
): Promise<Uint8Array> {
  const { fn } = s.route;
  // Only where the body's binary tensors start, to align them; BinaryBody checks the header itself.
  const declared = fn ? 0 : Number(s.header('inference-header-content-length'));
  const tensorsAt = Number.isSafeInteger(declared) && declared > 0 ? declared : 0;
  // Bodies come in buffers used again (./body-buffers.ts), given back once the reply is written;
  // not a job's (a function URL call answered 202), which is kept past its reply as the job's input.
  const kept = fn && submitsJob(s.header, query);
  const read = await readBody(s.req, o.maxBodyBytes, tensorsAt, kept ? undefined : bodyBuffers);
  if (read.pooled) s.pooled = read.body;
  const body = await decodeBody(read.body, s.header('content-encoding'), o.maxBodyBytes);
  s.bodyRead = true;
  return body;
}
