/**
 * The hot routes — function URLs (`POST /fn/{name}[/versions/{v}]`) and KServe infer
 * (`POST /v2/models/{name}[/versions/{v}]/infer`) — served on node:http directly. hono's fetch
 * adapter builds a WHATWG Request, a ReadableStream over the body, an AbortSignal and a Response per
 * request; on these routes that was most of the event loop's time per request (see the README's
 * benchmark notes). Everything else stays on hono (./app.ts). Same keys, limits and error mapping.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { deflate, gunzip, gzip, inflate } from 'node:zlib';

import { InvalidInputError, PayloadTooLargeError } from '../../sdk/errors.js';
import type { ApiKey } from '../config.js';
import type { Logger } from '../log.js';
import type { ServingFunctions } from '../functions/serving.js';
import { authorize } from '../caller/index.js';
import { parseVersion } from '../registry/index.js';
import { toHttpResponse } from './errors.js';
import type { JobQueue } from '../jobs/index.js';
import { callerId, requestHash } from '../jobs/index.js';
import { IdempotencyCache } from './idempotency.js';
import { BodyBuffers } from './body-buffers.js';
import { refuseFormBody } from './json-body.js';
import type { Kserve } from '../kserve/index.js';
import { formatInferResponse, parseInferRequest, requestedOutputs } from './kserve-body.js';

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

interface Call {
  name: string;
  version: number | undefined;
  /** The query string's parameters. */
  query: URLSearchParams;
  header: (name: string) => string | undefined;
  body: Uint8Array;
  signal: AbortSignal;
  /** The caller's API key ('' with none configured): what its shared memory regions belong to. */
  owner: string;
}

interface Reply {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
}

const FN = /^\/fn\/([^/]+)(?:\/versions\/([^/]+))?$/;
/** Most calls carry no query string: they share this (only ever read) one. */
const NO_QUERY = new URLSearchParams();
const INFER = /^\/v2\/models\/([^/]+)(?:\/versions\/([^/]+))?\/infer$/;

const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** `Hearth-Timeout-Ms: 250` → an absolute deadline. */
function deadlineOf(header: (name: string) => string | undefined): number | undefined {
  const raw = header('hearth-timeout-ms');
  if (raw === undefined) return undefined;
  const ms = Number(raw);
  // Past 2^31 - 1 ms (24.8 days) Node's timers fire at once: such a deadline would pass at once.
  if (!Number.isFinite(ms) || ms <= 0 || ms > MAX_TIMEOUT_MS)
    throw new InvalidInputError(`Hearth-Timeout-Ms must be a number of milliseconds from 1 to ${MAX_TIMEOUT_MS}`);
  return performance.now() + ms;
}

/** A path segment as a name, or the segment itself when it does not decode (for logs). */
function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new InvalidInputError(`"${segment}" is not a valid URL path segment`);
  }
}

/**
 * The body, whole, or PayloadTooLargeError as soon as it is known to be over `max` bytes. With its
 * length declared it is gathered into one buffer as it arrives, placed so that byte `alignAt` of it
 * (where the binary tensors of a KServe body begin) is 64-byte aligned: tensors are then read in
 * place, not copied out to be aligned (platform/kserve/tensors.ts).
 */
function readBody(
  req: IncomingMessage,
  max: number,
  alignAt = 0,
  buffers?: BodyBuffers,
): Promise<{ body: Uint8Array; pooled: boolean }> {
  const declared = req.headers['content-length'];
  const length = declared === undefined ? undefined : Number(declared);
  if (length !== undefined && length > max) return Promise.reject(tooLarge(max));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // Declared (the HTTP parser holds the body to it): one buffer, filled as chunks arrive. Only up
    // to PREALLOCATE_BYTES: a client that declares a large body and sends none of it must not make
    // the node hold that much for it before it arrives.
    const skew = (ALIGN - (alignAt % ALIGN)) % ALIGN;
    const whole =
      length !== undefined && Number.isSafeInteger(length) && length > 0 && length <= PREALLOCATE_BYTES
        ? new Uint8Array(buffers ? buffers.take(skew + length) : new ArrayBuffer(skew + length), skew, length)
        : undefined;
    req.on('data', (chunk: Buffer) => {
      if (whole && size + chunk.byteLength <= whole.byteLength) whole.set(chunk, size);
      else chunks.push(chunk);
      size += chunk.byteLength;
      if (size > max) {
        req.removeAllListeners('data');
        req.pause();
        reject(tooLarge(max));
      }
    });
    req.once('end', () => {
      if (whole && chunks.length === 0) resolve({ body: whole.subarray(0, size), pooled: buffers !== undefined });
      else if (whole)
        resolve({
          body: Buffer.concat([whole.subarray(0, Math.min(size, whole.byteLength)), ...chunks]),
          pooled: false,
        });
      else resolve({ body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), pooled: false });
    });
    req.once('error', reject);
  });
}

const ALIGN = 64;
/** The largest declared body read into one buffer made ahead of its bytes (a 224×224 FP32 image is 602 KB). */
const PREALLOCATE_BYTES = 4 * 2 ** 20;

const codecs = {
  gzip: { decode: promisify(gunzip), encode: promisify(gzip) },
  deflate: { decode: promisify(inflate), encode: promisify(deflate) },
} as const;
type Coding = keyof typeof codecs;

/**
 * A body sent with `Content-Encoding: gzip` or `deflate` (Triton's HTTP endpoint takes both),
 * inflated on libuv's threads and never past the body limit; Inference-Header-Content-Length then
 * counts the inflated bytes, as Triton counts them.
 */
async function decodeBody(body: Uint8Array, encoding: string | undefined, max: number): Promise<Uint8Array> {
  const coding = encoding?.trim().toLowerCase();
  if (!coding || coding === 'identity') return body;
  if (!(coding in codecs))
    throw new InvalidInputError(`Content-Encoding "${encoding}" is not supported: send gzip, deflate or identity`);
  try {
    return await codecs[coding as Coding].decode(body, { maxOutputLength: max });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(max);
    throw new InvalidInputError(`the ${coding} body could not be decompressed: ${(error as Error).message}`);
  }
}

/** The coding a client's Accept-Encoding asks for among gzip and deflate (q > 0), gzip first. */
function acceptedCoding(accept: string | undefined): Coding | undefined {
  if (!accept) return undefined;
  const weights = new Map<string, number>();
  for (const part of accept.toLowerCase().split(',')) {
    const [name, ...params] = part.trim().split(';');
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    weights.set(name!.trim(), q === undefined ? 1 : Number(q));
  }
  return (['gzip', 'deflate'] as const).find((c) => (weights.get(c) ?? weights.get('*') ?? 0) > 0);
}

/** The 413 of a body over the limit, on either router. */
export function tooLarge(max: number): PayloadTooLargeError {
  return new PayloadTooLargeError(`the body is over the limit of ${max} bytes (HEARTH_MAX_BODY_BYTES)`);
}

export function createHotRoutes(o: HotRouteOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { service } = o;
  const idempotency = new IdempotencyCache();

  const callFunction = async (call: Call): Promise<Reply> => {
    const contentType = call.header('content-type') ?? 'application/octet-stream';
    if (/\brespond-async\b/i.test(call.header('prefer') ?? '') || call.query.get('async') === '1')
      return submitJob(call, contentType);
    const run = () =>
      service.invoke(
        call.name,
        call.version,
        { body: call.body, contentType },
        { deadline: deadlineOf(call.header), signal: call.signal },
      );
    const key = call.header('idempotency-key');
    if (key !== undefined && (key.length === 0 || key.length > 256))
      throw new InvalidInputError('Idempotency-Key must be 1 to 256 characters');
    const { value, replayed } =
      key === undefined
        ? { value: run(), replayed: false }
        : idempotency.run(
            `${callerId(call.owner)}\0${call.name}/${call.version ?? ''}/${key}`,
            requestHash(contentType, call.body),
            run,
          );
    const result = await value;
    const headers: Record<string, string> = {
      'content-type': result.contentType,
      'hearth-version': String(result.version),
    };
    if (replayed) headers['idempotent-replayed'] = 'true';
    return { status: 200, headers, body: result.body };
  };

  /** `Prefer: respond-async`: 202 with the job's id and where to ask for it. */
  const submitJob = async (call: Call, contentType: string): Promise<Reply> => {
    await service.resolve(call.name, call.version);
    const webhook = call.header('hearth-webhook-url') ?? call.query.get('webhook') ?? undefined;
    const key = call.header('idempotency-key');
    const { record, existing } = await o.jobs.submit({
      function: call.name,
      version: call.version,
      body: call.body,
      contentType,
      webhook,
      idempotencyKey: key,
      owner: callerId(call.owner),
      requestId: call.header('x-request-id'),
    });
    const statusUrl = `/api/v1/jobs/${record.id}`;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      location: statusUrl,
      'preference-applied': 'respond-async',
    };
    if (existing) headers['idempotent-replayed'] = 'true';
    return {
      status: 202,
      headers,
      body: Buffer.from(JSON.stringify({ id: record.id, status: record.status, statusUrl })),
    };
  };

  const infer = async (call: Call): Promise<Reply> => {
    refuseFormBody(o.loopbackGuard === true, call.header);
    const header = call.header('inference-header-content-length');
    const jsonBytes = header === undefined ? call.body.byteLength : Number(header);
    const maxJson = o.maxJsonBytes ?? 32 * 2 ** 20;
    if (jsonBytes > maxJson)
      throw new PayloadTooLargeError(
        `the request's JSON is ${jsonBytes} bytes, over the limit of ${maxJson} (HEARTH_MAX_JSON_BYTES); send large tensors as binary data (Inference-Header-Content-Length)`,
      );
    const shm = { regions: o.kserve.sharedMemory, owner: call.owner };
    const { request, tensors } = await parseInferRequest(
      call.body,
      header === undefined ? undefined : Number(header),
      shm,
    );
    const answer = await o.kserve.infer({
      model: call.name,
      version: call.version,
      id: request.id,
      tensors: () => tensors,
      parameters: request.parameters as Record<string, unknown> | undefined,
      outputs: requestedOutputs(request),
      deadline: deadlineOf(call.header),
      signal: call.signal,
      shm,
    });
    const out = formatInferResponse(request, answer);
    const headers: Record<string, string> = { 'content-type': out.contentType };
    if (out.headerLength !== undefined) headers['inference-header-content-length'] = String(out.headerLength);
    return { status: 200, headers, body: out.body };
  };

  const send = (res: ServerResponse, reply: Reply): void => {
    if (res.destroyed) return;
    const headers: Record<string, string> = { ...reply.headers, 'content-length': String(reply.body.byteLength) };
    if (reply.status === 200 && reply.body.byteLength > 0) headers.vary = 'accept-encoding';
    // While draining, no connection is kept alive past its response.
    if (!o.ready()) headers.connection = 'close';
    try {
      res.writeHead(reply.status, headers);
    } catch (error) {
      // A header Node refuses (the hook layer checks content types; this is the last line): the
      // caller gets a 500, the process goes on.
      o.log?.error({ err: error }, 'a response header was refused');
      if (res.headersSent) return void res.destroy();
      const body = Buffer.from(JSON.stringify({ error: 'the response could not be sent', code: 'INTERNAL' }));
      res.writeHead(500, { 'content-type': 'application/json', 'content-length': String(body.byteLength) });
      return void res.end(body);
    }
    res.end(reply.body);
  };

  const fail = (
    res: ServerResponse,
    error: unknown,
    closeConnection: boolean,
    requestId: string | undefined,
    fn?: string,
  ): void => {
    // The whole message (a model's traceback) goes to the function's own log, for its admins.
    const onDetail = service.errorDetail(fn === undefined ? undefined : safeDecode(fn), requestId);
    const { status, body, headers } = toHttpResponse(error, { requestId, log: o.log, onDetail });
    send(res, {
      status,
      headers: { ...headers, 'content-type': 'application/json', ...(closeConnection ? { connection: 'close' } : {}) },
      body: Buffer.from(JSON.stringify(body)),
    });
  };

  const bodyBuffers = new BodyBuffers();
  return (req, res) => {
    if (req.method !== 'POST') return false;
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const fn = FN.exec(path);
    const match = fn ?? INFER.exec(path);
    const handler = fn ? callFunction : match ? infer : undefined;
    if (!handler || !match) return false;

    o.inflight?.enter();
    const controller = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) controller.abort();
      o.inflight?.leave();
    });
    const header = (name: string): string | undefined => {
      const v = req.headers[name];
      return Array.isArray(v) ? v.join(', ') : v;
    };
    let bodyRead = false;
    let pooled: Uint8Array | undefined;
    (async () => {
      const owner = authorize(o.apiKeys, 'invoke', header);
      const held = o.kserve.admit({ deadline: deadlineOf(header), signal: controller.signal });
      if (held) await held;
      const name = decode(match[1]!);
      const version = parseVersion(match[2] === undefined ? undefined : decode(match[2]));
      // Only where the body's binary tensors start, to align them; BinaryBody checks the header itself.
      const declared = fn ? 0 : Number(header('inference-header-content-length'));
      const tensorsAt = Number.isSafeInteger(declared) && declared > 0 ? declared : 0;
      // KServe bodies come in buffers used again (./body-buffers.ts); a function's may be kept
      // past its reply (an async job's input) and are its own.
      const read = await readBody(req, o.maxBodyBytes, tensorsAt, fn ? undefined : bodyBuffers);
      if (read.pooled) pooled = read.body;
      const body = await decodeBody(read.body, header('content-encoding'), o.maxBodyBytes);
      bodyRead = true;
      const reply = await handler({
        name,
        version,
        query: q === -1 ? NO_QUERY : new URLSearchParams(url.slice(q + 1)),
        header,
        body,
        signal: controller.signal,
        owner,
      });
      const coding = acceptedCoding(header('accept-encoding'));
      if (coding && reply.body.byteLength > 0) {
        reply.body = await codecs[coding].encode(reply.body);
        reply.headers['content-encoding'] = coding;
      }
      return reply;
    })().then(
      (reply) => {
        send(res, reply);
        // Answered and written out: nothing holds the body now. (On any failure it is left to GC.)
        const body = pooled;
        if (body)
          res.once('finish', () => bodyBuffers.give(body.buffer as ArrayBuffer, body.byteOffset + body.byteLength));
      },
      // A request refused before its body was read closes its connection: the unread body is not
      // drained, so nothing over the limit is ever buffered.
      (error: unknown) => fail(res, error, !bodyRead, header('x-request-id'), match[1]),
    );
    return true;
  };
}
