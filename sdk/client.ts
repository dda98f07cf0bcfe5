/**
 * The typed client of a Hearth node: the management API (/api/v1), function URLs (sync and async,
 * with deadline and idempotency key), jobs, and KServe v2 infer with typed tensors over Triton's
 * binary tensor extension. Error bodies become the typed errors of ./errors.ts in one place
 * (`check`). Defaults: HEARTH_URL (http://127.0.0.1:8000) and HEARTH_API_KEY.
 */
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';

import { readEvents } from './event-stream.js';
import { BinaryBody, encodeBinary } from './kserve-binary.js';
import type { z } from 'zod';

import type {
  ArtifactInfo,
  CanaryRequest,
  DeployResult,
  FunctionInfo,
  FunctionListEntry,
  JobAccepted,
  JobInfo,
  JobList,
  Catalog,
  NodeInfo,
  FunctionLogEntry,
  PoolInfo,
  RollbackResult,
  ScalingRequest,
  ScalingResult,
  SecretInfo,
  SeriesSample,
} from './api/index.js';
import {
  ArtifactInfoSchema,
  ArtifactStoredSchema,
  DeployResultSchema,
  FunctionInfoSchema,
  FunctionListSchema,
  JobAcceptedSchema,
  JobInfoSchema,
  JobListSchema,
  CatalogSchema,
  NodeListSchema,
  LogEntrySchema,
  LogListSchema,
  PoolListSchema,
  RollbackResultSchema,
  ScalingResultSchema,
  SecretDeletedSchema,
  SecretInfoSchema,
  SecretListSchema,
  SeriesResultSchema,
  TrafficResultSchema,
} from './api/index.js';
import { errorFromBody, HearthError, UnavailableError } from './errors.js';
import type { FunctionSpecInput } from './spec/function-spec.js';
import type { DType, Tensor } from './tensor.js';
import { bytesOf, elementSize, viewAs } from './tensor.js';

export interface HearthOptions {
  url?: string;
  apiKey?: string;
  /** Replaces the global fetch (tests, proxies). */
  fetch?: typeof fetch;
  /** A CA file (PEM) to trust for an https node, beside the system's (default: HEARTH_CA_FILE). */
  caFile?: string;
  /** Client certificate and key files (PEM) for a node that asks for mutual TLS (HEARTH_CLIENT_CERT, HEARTH_CLIENT_KEY). */
  certFile?: string;
  keyFile?: string;
}

/**
 * fetch over an undici Agent that trusts the CA file and presents the client certificate given. The
 * files are read now (a missing one fails here); undici is loaded on the first call only, so a
 * client without TLS files (and the CLI's start) never pays for it.
 */
function tlsFetch(files: { ca?: string; cert?: string; key?: string }): typeof fetch {
  const read = (file: string | undefined) => (file === undefined ? undefined : readFileSync(file));
  const connect = {
    ...(files.ca ? { ca: [...rootCertificates, read(files.ca)!.toString()] } : {}),
    ...(files.cert ? { cert: read(files.cert) } : {}),
    ...(files.key ? { key: read(files.key) } : {}),
  };
  let agent: Promise<{ fetch: typeof import('undici').fetch; dispatcher: import('undici').Agent }> | undefined;
  return (async (input: string, init?: RequestInit) => {
    agent ??= import('undici').then((undici) => ({ fetch: undici.fetch, dispatcher: new undici.Agent({ connect }) }));
    const { fetch: undiciFetch, dispatcher } = await agent;
    return undiciFetch(input, { ...(init as object), dispatcher });
  }) as unknown as typeof fetch;
}

export interface InvokeOptions {
  version?: number;
  /** Milliseconds the node may take (Hearth-Timeout-Ms). */
  timeoutMs?: number;
  idempotencyKey?: string;
  /** Defaults to application/json for objects and strings, application/octet-stream for bytes. */
  contentType?: string;
}

export interface MapOptions {
  /** Jobs in flight at once (default 16). */
  concurrency?: number;
  /**
   * Each input's job is submitted with the idempotency key `<keyPrefix>:<index>`, so running the
   * same map again (after a crash, a Ctrl-C) finds the jobs already done instead of redoing them.
   */
  keyPrefix?: string;
  version?: number;
  /** Longest one input's job may take, queue included (default 10 minutes). */
  timeoutMs?: number;
  /** Hears each input as it settles. */
  onSettled?: (outcome: MapOutcome) => void;
}

/** One input's outcome: its output (the function's JSON, or the body as base64), or its error. */
export type MapOutcome =
  | { index: number; ok: true; job: string; output: unknown }
  | { index: number; ok: false; job?: string; error: { code: string; message: string } };

export interface InvokeResult {
  status: number;
  contentType: string;
  version: number;
  body: Uint8Array;
  /** The body as JSON (throws if it is not). */
  json<T = unknown>(): T;
  text(): string;
}

export interface InferOutput extends Tensor {
  name: string;
}

/** Turns an error body into the typed error, or a plain HearthError for anything else. */
async function check(response: Response): Promise<Response> {
  if (response.ok) return response;
  const text = await response.text();
  let body: { error?: string; code?: string } | undefined;
  try {
    body = JSON.parse(text) as { error?: string; code?: string };
  } catch {
    body = undefined;
  }
  if (body && typeof body.error === 'string' && typeof body.code === 'string')
    throw errorFromBody({ error: body.error, code: body.code });
  throw new HearthError(`HTTP ${response.status}: ${text.slice(0, 200) || response.statusText}`);
}

function toBody(data: unknown, contentType?: string): { body: Uint8Array | string; type: string } {
  if (data instanceof Uint8Array) return { body: data, type: contentType ?? 'application/octet-stream' };
  if (typeof data === 'string') return { body: data, type: contentType ?? 'application/json' };
  return { body: JSON.stringify(data), type: contentType ?? 'application/json' };
}

export type {
  ArtifactInfo,
  DeployResult,
  FunctionInfo,
  FunctionListEntry,
  FunctionVersionInfo,
  JobAccepted,
  JobInfo,
  JobList,
  Catalog,
  NodeInfo,
  PoolInfo,
} from './api/index.js';

/** A response body checked against the API's schema (sdk/api): a node that answers otherwise is refused. */
function parsed<S extends z.ZodType>(schema: S, body: unknown, what: string): z.infer<S> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  throw new HearthError(
    `the node's answer to ${what} does not match the API: ${result.error.issues[0]?.message ?? 'unknown'}`,
  );
}

export class Hearth {
  readonly url: string;
  readonly #apiKey: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(options: HearthOptions = {}) {
    this.url = (options.url ?? process.env.HEARTH_URL ?? 'http://127.0.0.1:8000').replace(/\/+$/, '');
    this.#apiKey = options.apiKey ?? process.env.HEARTH_API_KEY;
    const ca = options.caFile ?? process.env.HEARTH_CA_FILE;
    const cert = options.certFile ?? process.env.HEARTH_CLIENT_CERT;
    const key = options.keyFile ?? process.env.HEARTH_CLIENT_KEY;
    this.#fetch = options.fetch ?? (ca || cert || key ? tlsFetch({ ca, cert, key }) : fetch);
  }

  /** One call with the API key; UnavailableError when the node cannot be reached. Any status. */
  async #send(path: string, init: RequestInit & { headers?: Record<string, string> } = {}): Promise<Response> {
    const headers: Record<string, string> = { ...(init.headers ?? {}) };
    if (this.#apiKey) headers.authorization = `Bearer ${this.#apiKey}`;
    try {
      return await this.#fetch(`${this.url}${path}`, { ...init, headers });
    } catch (cause) {
      throw new UnavailableError(
        `cannot reach Hearth at ${this.url}: ${(cause as Error).cause instanceof Error ? ((cause as Error).cause as Error).message : (cause as Error).message}`,
        { cause },
      );
    }
  }

  /** One call whose error statuses become typed errors. */
  async #request(path: string, init: RequestInit & { headers?: Record<string, string> } = {}): Promise<Response> {
    return check(await this.#send(path, init));
  }

  async #json<S extends z.ZodType>(
    schema: S,
    path: string,
    init?: RequestInit & { headers?: Record<string, string> },
  ): Promise<z.infer<S>> {
    return parsed(schema, await (await this.#request(path, init)).json(), `${init?.method ?? 'GET'} ${path}`);
  }

  #post<S extends z.ZodType>(schema: S, path: string, body: unknown, method = 'POST'): Promise<z.infer<S>> {
    return this.#json(schema, path, {
      method,
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    });
  }

  // --- health ------------------------------------------------------------------------------------

  async ready(): Promise<boolean> {
    const r = await this.#fetch(`${this.url}/v2/health/ready`).catch(() => undefined);
    return r?.status === 200;
  }

  // --- artifacts ---------------------------------------------------------------------------------

  /** The artifact's size if the node has it (HEAD), else undefined. */
  async artifact(sha256: string): Promise<ArtifactInfo | undefined> {
    const r = await this.#send(`/api/v1/artifacts/${sha256}`, { method: 'HEAD' });
    if (r.status === 404) return undefined;
    await check(r);
    return { sha256, size: Number(r.headers.get('x-artifact-size')) };
  }

  /** Uploads bytes under their sha256 (streamed when given a stream). */
  async uploadArtifact(
    sha256: string,
    body: Uint8Array | ReadableStream<Uint8Array>,
    size?: number,
  ): Promise<ArtifactInfo & { created: boolean }> {
    const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
    if (size !== undefined) headers['content-length'] = String(size);
    return this.#json(ArtifactStoredSchema, `/api/v1/artifacts/${sha256}`, {
      method: 'PUT',
      body,
      headers,
      duplex: 'half',
    } as RequestInit & {
      headers: Record<string, string>;
    });
  }

  /** Brings an object of the node's S3 bucket and prefix in as an artifact (`s3://bucket/prefix/key`). */
  importArtifact(uri: string): Promise<ArtifactInfo> {
    return this.#post(ArtifactInfoSchema, '/api/v1/artifacts/import', { uri });
  }

  // --- functions ---------------------------------------------------------------------------------

  async deploy(
    spec: FunctionSpecInput | Record<string, unknown>,
    artifacts: { model: string; hook?: string },
    options: { keepTraffic?: boolean; canary?: CanaryRequest } = {},
  ): Promise<DeployResult> {
    const body = {
      spec,
      artifacts,
      ...(options.keepTraffic ? { keepTraffic: true } : {}),
      ...(options.canary ? { canary: options.canary } : {}),
    };
    const r = await this.#send('/api/v1/functions', {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    });
    // 422 (the version failed to load) still carries the version and its reason.
    if (r.status === 422) return parsed(DeployResultSchema, await r.json(), 'a deploy');
    return parsed(DeployResultSchema, await (await check(r)).json(), 'a deploy');
  }

  async list(): Promise<FunctionListEntry[]> {
    return (await this.#json(FunctionListSchema, '/api/v1/functions')).functions;
  }

  describe(name: string): Promise<FunctionInfo> {
    return this.#json(FunctionInfoSchema, `/api/v1/functions/${encodeURIComponent(name)}`);
  }

  async delete(name: string): Promise<void> {
    await this.#request(`/api/v1/functions/${encodeURIComponent(name)}`, { method: 'DELETE' });
  }

  /** Replaces the traffic split: `{ "2": 90, "3": 10 }`. */
  setTraffic(
    name: string,
    traffic: Record<string, number>,
  ): Promise<{ name: string; traffic: Record<string, number> }> {
    return this.#post(TrafficResultSchema, `/api/v1/functions/${encodeURIComponent(name)}/traffic`, { traffic }, 'PUT');
  }

  /** A function's time series: one sample a second for the last 15 minutes, by version. */
  async series(name: string, version?: number): Promise<Record<string, SeriesSample[]>> {
    const q = version === undefined ? '' : `?version=${version}`;
    return (await this.#json(SeriesResultSchema, `/api/v1/functions/${encodeURIComponent(name)}/series${q}`)).versions;
  }

  /** What this key may call: every function's versions with their inputs and outputs (any key). */
  catalog(): Promise<Catalog> {
    return this.#json(CatalogSchema, '/api/v1/catalog');
  }

  /** The cluster's live nodes, each with its pools' count and how long since its last heartbeat. */
  async nodes(): Promise<NodeInfo[]> {
    return (await this.#json(NodeListSchema, '/api/v1/nodes')).nodes;
  }

  /** Sets a secret (functions whose spec lists `name` read it as ctx.secrets.NAME). The value never comes back. */
  setSecret(name: string, value: string): Promise<SecretInfo> {
    return this.#post(SecretInfoSchema, `/api/v1/secrets/${encodeURIComponent(name)}`, { value }, 'PUT');
  }

  /** The node's secrets: names and when each was set, never values. */
  async secrets(): Promise<SecretInfo[]> {
    return (await this.#json(SecretListSchema, '/api/v1/secrets')).secrets;
  }

  /** Removes a secret; false when there was none. */
  async deleteSecret(name: string): Promise<boolean> {
    const r = await this.#request(`/api/v1/secrets/${encodeURIComponent(name)}`, { method: 'DELETE' });
    return SecretDeletedSchema.parse(await r.json()).deleted;
  }

  /** Back to the split before the last traffic change (a second rollback undoes the first). */
  rollback(name: string): Promise<RollbackResult> {
    return this.#post(RollbackResultSchema, `/api/v1/functions/${encodeURIComponent(name)}/rollback`, {});
  }

  /** Changes scaling in place — of `version`, or of every version taking traffic; the split stays. */
  scale(name: string, scaling: Omit<ScalingRequest, 'version'>, version?: number): Promise<ScalingResult> {
    return this.#post(
      ScalingResultSchema,
      `/api/v1/functions/${encodeURIComponent(name)}/scaling`,
      { ...scaling, ...(version === undefined ? {} : { version }) },
      'PATCH',
    );
  }

  async pools(): Promise<PoolInfo[]> {
    return (await this.#json(PoolListSchema, '/api/v1/pools')).pools;
  }

  /** A function's own log, oldest first: hook output, runner lines, lifecycle, error detail (admin). */
  /** A function's log: the last `limit` entries (of one version; from `since`, ms since the epoch). */
  async logs(
    name: string,
    options: { version?: number; limit?: number; since?: number; level?: FunctionLogEntry['level'] } = {},
  ): Promise<FunctionLogEntry[]> {
    const query = new URLSearchParams();
    if (options.version !== undefined) query.set('version', String(options.version));
    if (options.level !== undefined) query.set('level', options.level);
    if (options.limit !== undefined) query.set('limit', String(options.limit));
    if (options.since !== undefined) query.set('since', String(options.since));
    const q = query.size ? `?${query}` : '';
    return (await this.#json(LogListSchema, `/api/v1/functions/${encodeURIComponent(name)}/logs${q}`)).entries;
  }

  /**
   * A function's log followed live (server-sent events): the last `limit` entries, then every new
   * one, until `signal` aborts or the node ends the stream (it drains).
   */
  async *followLogs(
    name: string,
    options: {
      version?: number;
      limit?: number;
      since?: number;
      level?: FunctionLogEntry['level'];
      signal?: AbortSignal;
    } = {},
  ): AsyncGenerator<FunctionLogEntry> {
    const query = new URLSearchParams({ follow: '1' });
    if (options.version !== undefined) query.set('version', String(options.version));
    if (options.level !== undefined) query.set('level', options.level);
    if (options.limit !== undefined) query.set('limit', String(options.limit));
    if (options.since !== undefined) query.set('since', String(options.since));
    const r = await this.#request(`/api/v1/functions/${encodeURIComponent(name)}/logs?${query}`, {
      ...(options.signal ? { signal: options.signal } : {}),
    });
    try {
      for await (const e of readEvents(r.body as unknown as AsyncIterable<Uint8Array>))
        if (e.event === 'log') yield LogEntrySchema.parse(JSON.parse(e.data));
    } catch (error) {
      if (options.signal?.aborted) return;
      throw error;
    }
  }

  // --- function URLs -----------------------------------------------------------------------------

  #invokeHeaders(contentType: string, options: InvokeOptions): Record<string, string> {
    const headers: Record<string, string> = { 'content-type': contentType };
    if (options.timeoutMs !== undefined) headers['hearth-timeout-ms'] = String(options.timeoutMs);
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    return headers;
  }

  #path(name: string, version?: number): string {
    return `/fn/${encodeURIComponent(name)}${version === undefined ? '' : `/versions/${version}`}`;
  }

  /** Calls a function and waits for its response. */
  async invoke(name: string, data: unknown, options: InvokeOptions = {}): Promise<InvokeResult> {
    const { body, type } = toBody(data, options.contentType);
    const r = await this.#request(this.#path(name, options.version), {
      method: 'POST',
      body,
      headers: this.#invokeHeaders(type, options),
    });
    const bytes = new Uint8Array(await r.arrayBuffer());
    const text = () => new TextDecoder().decode(bytes);
    return {
      status: r.status,
      contentType: r.headers.get('content-type') ?? '',
      version: Number(r.headers.get('hearth-version')),
      body: bytes,
      text,
      json: <T>() => JSON.parse(text()) as T,
    };
  }

  /** Submits an async invocation: `{ id, status, statusUrl }` at once; `webhook` hears the outcome. */
  invokeAsync(name: string, data: unknown, options: InvokeOptions & { webhook?: string } = {}): Promise<JobAccepted> {
    const { body, type } = toBody(data, options.contentType);
    const headers = {
      ...this.#invokeHeaders(type, options),
      prefer: 'respond-async',
      ...(options.webhook ? { 'hearth-webhook-url': options.webhook } : {}),
    };
    return this.#json(JobAcceptedSchema, this.#path(name, options.version), { method: 'POST', body, headers });
  }

  /** Your jobs (an admin key: everyone's), newest first, without results; `next` goes on from there. */
  jobs(
    query: { status?: JobInfo['status']; function?: string; limit?: number; before?: string } = {},
  ): Promise<JobList> {
    const q = new URLSearchParams(
      Object.entries(query).flatMap(([k, v]): [string, string][] => (v === undefined ? [] : [[k, String(v)]])),
    ).toString();
    return this.#json(JobListSchema, `/api/v1/jobs${q ? `?${q}` : ''}`);
  }

  job(id: string): Promise<JobInfo> {
    return this.#json(JobInfoSchema, `/api/v1/jobs/${encodeURIComponent(id)}`);
  }

  /** A finished job's result: its own bytes and content type, as the synchronous call answers. */
  async jobResult(id: string): Promise<{ contentType: string; body: Uint8Array }> {
    const r = await this.#request(`/api/v1/jobs/${encodeURIComponent(id)}/result`);
    return { contentType: r.headers.get('content-type') ?? '', body: new Uint8Array(await r.arrayBuffer()) };
  }

  /**
   * A function over many inputs, as async jobs with at most `concurrency` in flight: the outcomes in
   * input order, one per input, failures included (a failure never stops the rest).
   */
  async map(name: string, inputs: readonly unknown[], options: MapOptions = {}): Promise<MapOutcome[]> {
    const outcomes = new Array<MapOutcome>(inputs.length);
    let next = 0;
    const one = async (index: number): Promise<MapOutcome> => {
      let job: string | undefined;
      try {
        job = (
          await this.invokeAsync(name, inputs[index], {
            version: options.version,
            ...(options.keyPrefix ? { idempotencyKey: `${options.keyPrefix}:${index}` } : {}),
          })
        ).id;
        const done = await this.waitForJob(job, { timeoutMs: options.timeoutMs ?? 600_000 });
        if (done.status === 'succeeded') {
          const result = done.result;
          const output = result?.json !== undefined ? result.json : (result?.base64 ?? null);
          return { index, ok: true, job, output };
        }
        if (done.status === 'failed')
          return {
            index,
            ok: false,
            job,
            error: { code: done.error?.code ?? 'INTERNAL', message: done.error?.error ?? 'the job failed' },
          };
        return {
          index,
          ok: false,
          job,
          error: { code: 'DEADLINE_EXCEEDED', message: `job ${job} is still ${done.status}` },
        };
      } catch (error) {
        const e = error as HearthError;
        return { index, ok: false, ...(job ? { job } : {}), error: { code: e.code ?? 'INTERNAL', message: e.message } };
      }
    };
    const worker = async () => {
      while (next < inputs.length) {
        const index = next++;
        const outcome = await one(index);
        outcomes[index] = outcome;
        options.onSettled?.(outcome);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(options.concurrency ?? 16, inputs.length)) }, worker));
    return outcomes;
  }

  /** Polls a job until it succeeds or fails (or `timeoutMs` passes). */
  async waitForJob(id: string, options: { timeoutMs?: number; intervalMs?: number } = {}): Promise<JobInfo> {
    const end = Date.now() + (options.timeoutMs ?? 300_000);
    let interval = options.intervalMs ?? 100;
    for (;;) {
      const job = await this.job(id);
      if (job.status === 'succeeded' || job.status === 'failed') return job;
      if (Date.now() > end) return job;
      await new Promise((r) => setTimeout(r, interval));
      interval = Math.min(interval * 1.5, 2000);
    }
  }

  // --- KServe v2 -------------------------------------------------------------------------------------

  /** Raw tensors in, raw tensors out (no hooks), over Triton's binary tensor extension. */
  async infer(
    name: string,
    inputs: Record<string, Tensor>,
    options: { version?: number; timeoutMs?: number } = {},
  ): Promise<Record<string, InferOutput>> {
    const entries = Object.entries(inputs);
    const request = {
      inputs: entries.map(([n, t]) => ({
        name: n,
        shape: t.shape,
        datatype: t.dtype,
        parameters: { binary_data_size: (t.data as ArrayBufferView).byteLength },
      })),
      parameters: { binary_data_output: true },
    };
    const { body, headerLength } = encodeBinary(
      request,
      entries.map(([, t]) => bytesOf(t.data as ArrayBufferView)),
    );
    const path = `/v2/models/${encodeURIComponent(name)}${options.version === undefined ? '' : `/versions/${options.version}`}/infer`;
    // Raw tensors compress poorly: fetch would otherwise ask for gzip on every response.
    const headers: Record<string, string> = {
      'content-type': 'application/octet-stream',
      'inference-header-content-length': String(headerLength),
      'accept-encoding': 'identity',
    };
    if (options.timeoutMs !== undefined) headers['hearth-timeout-ms'] = String(options.timeoutMs);
    const r = await this.#request(path, { method: 'POST', body, headers });
    const bytes = new Uint8Array(await r.arrayBuffer());
    const length = r.headers.get('inference-header-content-length');
    const parsed = new BinaryBody(bytes, length === null ? undefined : Number(length), 'the infer response');
    const response = parsed.header as {
      outputs: { name: string; shape: number[]; datatype: DType; parameters?: { binary_data_size?: number } }[];
    };
    const out: Record<string, InferOutput> = {};
    for (const o of response.outputs) {
      const n = o.parameters?.binary_data_size;
      if (n === undefined) throw new HearthError(`output ${o.name} came back as JSON; expected binary data`);
      // A copy, so the typed array starts at an aligned offset.
      const data = viewAs(o.datatype, parsed.take(n, `output "${o.name}"`).slice());
      if (data.length * elementSize(o.datatype) !== n)
        throw new HearthError(`output ${o.name}: ${n} bytes do not fit ${o.datatype}`);
      out[o.name] = { name: o.name, dtype: o.datatype, shape: o.shape, data } as InferOutput;
    }
    return out;
  }
}
