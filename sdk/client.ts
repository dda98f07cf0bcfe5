/**
 * The typed client of a Hearth node: the management API (/api/v1), function URLs (sync and async,
 * with deadline and idempotency key), jobs, and KServe v2 infer with typed tensors over Triton's
 * binary tensor extension. Defaults: HEARTH_URL (http://127.0.0.1:8000) and HEARTH_API_KEY.
 *
 * This file is the client's public face: `Hearth`, its options and results. Each of its methods is
 * one call of ./client/ (one file per group of calls), all through one Transport
 * (./client/transport.ts), where error bodies become the typed errors of ./errors.ts in one place.
 */
import type {
  ArtifactInfo,
  Catalog,
  DeployResult,
  FunctionInfo,
  FunctionListEntry,
  FunctionLogEntry,
  JobAccepted,
  JobInfo,
  JobList,
  NodeInfo,
  PoolInfo,
  RollbackResult,
  ScalingRequest,
  ScalingResult,
  SecretInfo,
  SeriesSample,
} from './api/index.js';
import { artifact, importArtifact, uploadArtifact } from './client/artifacts.js';
import type { DeployArtifacts, DeployOptions } from './client/functions.js';
import { deploy, describe, list, remove, rollback, scale, series, setTraffic } from './client/functions.js';
import type { InferOptions, InferOutput } from './client/infer.js';
import { infer } from './client/infer.js';
import type { InvokeOptions, InvokeResult } from './client/invoke.js';
import { invoke, invokeAsync } from './client/invoke.js';
import type { JobsQuery, MapOptions, MapOutcome, WaitOptions } from './client/jobs.js';
import { job, jobResult, jobs, map, waitForJob } from './client/jobs.js';
import type { LogsOptions } from './client/logs.js';
import { followLogs, logs } from './client/logs.js';
import { catalog, deleteSecret, nodes, pools, secrets, setSecret } from './client/node-views.js';
import type { HearthOptions } from './client/transport.js';
import { Transport } from './client/transport.js';
import type { FunctionSpecInput } from './spec/function-spec.js';
import type { Tensor } from './tensor.js';

export type {
  ArtifactInfo,
  Catalog,
  DeployResult,
  FunctionInfo,
  FunctionListEntry,
  FunctionVersionInfo,
  JobAccepted,
  JobInfo,
  JobList,
  NodeInfo,
  PoolInfo,
} from './api/index.js';
export type { InferOutput } from './client/infer.js';
export type { InvokeOptions, InvokeResult } from './client/invoke.js';
export type { MapOptions, MapOutcome } from './client/jobs.js';
export type { HearthOptions } from './client/transport.js';

/**
 * A client of one Hearth node. Its methods, by group: health (`ready`), artifacts, functions and
 * versions (`deploy`, `list`, `describe`, `delete`, `setTraffic`, `rollback`, `scale`, `series`),
 * the node (`catalog`, `nodes`, `pools`, secrets), logs, function URLs (`invoke`, `invokeAsync`),
 * jobs (`jobs`, `job`, `jobResult`, `map`, `waitForJob`) and KServe v2 (`infer`). A call the node
 * refuses throws the typed error of its body (`FunctionNotFoundError`, `InvalidInputError`, …).
 *
 * @example
 * import { Hearth } from '@hearth/sdk';
 *
 * const hearth = new Hearth({ url: 'http://127.0.0.1:8000' });
 * const answer = await hearth.invoke('text-sentiment', { text: 'a wonderful film' });
 * console.log(answer.json());
 * const row = Array.from({ length: 1024 }, (_, i) => Math.sin(i) / 10); // tabular-mlp takes 1024 numbers a row
 * const job = await hearth.waitForJob((await hearth.invokeAsync('tabular-mlp', { row })).id);
 * console.log(job.status); // succeeded
 */
export class Hearth {
  readonly url: string;
  readonly #node: Transport;

  /**
   * A client of the node at `url` (default HEARTH_URL, else http://127.0.0.1:8000) acting with
   * `apiKey` (default HEARTH_API_KEY). For an https node with its own CA or mutual TLS, `caFile`,
   * `certFile` and `keyFile` (default HEARTH_CA_FILE, HEARTH_CLIENT_CERT, HEARTH_CLIENT_KEY) are read
   * here: a missing file fails now, not at the first call.
   *
   * @example
   * const local = new Hearth(); // HEARTH_URL and HEARTH_API_KEY, else the local node with no key
   * const remote = new Hearth({
   *   url: 'https://hearth.example.com:8000',
   *   apiKey: process.env.HEARTH_API_KEY,
   *   caFile: 'ca.pem',
   *   certFile: 'client.pem',
   *   keyFile: 'client-key.pem',
   * });
   * if (!(await remote.ready())) console.error(`${remote.url} is not ready`);
   */
  constructor(options: HearthOptions = {}) {
    this.#node = new Transport(options);
    this.url = this.#node.url;
  }

  // --- health ------------------------------------------------------------------------------------

  /** Whether the node is ready to serve (GET /v2/health/ready); false when it cannot be reached. */
  ready(): Promise<boolean> {
    return this.#node.ready();
  }

  // --- artifacts ---------------------------------------------------------------------------------

  /** The artifact's size if the node has it (HEAD), else undefined. */
  async artifact(sha256: string): Promise<ArtifactInfo | undefined> {
    return artifact(this.#node, sha256);
  }

  /** Uploads bytes under their sha256 (streamed when given a stream). */
  async uploadArtifact(
    sha256: string,
    body: Uint8Array | ReadableStream<Uint8Array>,
    size?: number,
  ): Promise<ArtifactInfo & { created: boolean }> {
    return uploadArtifact(this.#node, sha256, body, size);
  }

  /** Brings an object of the node's S3 bucket and prefix in as an artifact (`s3://bucket/prefix/key`). */
  importArtifact(uri: string): Promise<ArtifactInfo> {
    return importArtifact(this.#node, uri);
  }

  // --- functions ---------------------------------------------------------------------------------

  /**
   * Creates a new immutable version of a function from its spec and its artifacts (uploaded first,
   * by sha256), and moves all traffic to it once it is ready — unless `keepTraffic`, or a `canary`
   * that takes a share and is promoted or rolled back by the node. A version that fails to load
   * comes back with `status: 'failed'` and its reason. `hearth deploy <folder>` does all of this.
   *
   * @example
   * import { createHash } from 'node:crypto';
   * import { readFile } from 'node:fs/promises';
   *
   * const model = await readFile('model.pt');
   * const sha256 = createHash('sha256').update(model).digest('hex');
   * if (!(await hearth.artifact(sha256))) await hearth.uploadArtifact(sha256, model);
   * const deployed = await hearth.deploy(
   *   {
   *     name: 'tabular-mlp',
   *     model: 'model.pt',
   *     maxBatchSize: 64,
   *     inputs: [{ name: 'x', dtype: 'FP32', dims: [1024] }],
   *     outputs: [{ name: 'y', dtype: 'FP32', dims: [1024] }],
   *   },
   *   { model: sha256 },
   *   { canary: { percent: 10, windowMs: 60_000 } }, // or { keepTraffic: true }, or nothing: all traffic
   * );
   * console.log(deployed.status, `${hearth.url}${deployed.url}`); // ready http://127.0.0.1:8000/fn/tabular-mlp
   */
  async deploy(
    spec: FunctionSpecInput | Record<string, unknown>,
    artifacts: DeployArtifacts,
    options: DeployOptions = {},
  ): Promise<DeployResult> {
    return deploy(this.#node, spec, artifacts, options);
  }

  async list(): Promise<FunctionListEntry[]> {
    return list(this.#node);
  }

  describe(name: string): Promise<FunctionInfo> {
    return describe(this.#node, name);
  }

  async delete(name: string): Promise<void> {
    return remove(this.#node, name);
  }

  /**
   * Replaces the traffic split: `{ "2": 90, "3": 10 }`.
   *
   * @example
   * await hearth.setTraffic('tabular-mlp', { '1': 90, '2': 10 }); // v2 takes a tenth of the calls
   * const { traffic, from } = await hearth.rollback('tabular-mlp'); // traffic is `from` before setTraffic
   */
  setTraffic(
    name: string,
    traffic: Record<string, number>,
  ): Promise<{ name: string; traffic: Record<string, number> }> {
    return setTraffic(this.#node, name, traffic);
  }

  /** Back to the split before the last traffic change (a second rollback undoes the first). */
  rollback(name: string): Promise<RollbackResult> {
    return rollback(this.#node, name);
  }

  /**
   * Changes scaling in place — of `version`, or of every version taking traffic; the split stays.
   *
   * @example
   * await hearth.scale('tabular-mlp', { minInstances: 1, maxInstances: 8 }); // every version taking traffic
   * await hearth.scale('tabular-mlp', { minInstances: 0 }, 2); // v2 only: scales to zero when idle
   */
  scale(name: string, scaling: Omit<ScalingRequest, 'version'>, version?: number): Promise<ScalingResult> {
    return scale(this.#node, name, scaling, version);
  }

  /** A function's time series: one sample a second for the last 15 minutes, by version. */
  async series(name: string, version?: number): Promise<Record<string, SeriesSample[]>> {
    return series(this.#node, name, version);
  }

  // --- the node ----------------------------------------------------------------------------------

  /** What this key may call: every function's versions with their inputs and outputs (any key). */
  catalog(): Promise<Catalog> {
    return catalog(this.#node);
  }

  /** The cluster's live nodes, each with its pools' count and how long since its last heartbeat. */
  async nodes(): Promise<NodeInfo[]> {
    return nodes(this.#node);
  }

  async pools(): Promise<PoolInfo[]> {
    return pools(this.#node);
  }

  /** Sets a secret (functions whose spec lists `name` read it as ctx.secrets.NAME). The value never comes back. */
  setSecret(name: string, value: string): Promise<SecretInfo> {
    return setSecret(this.#node, name, value);
  }

  /** The node's secrets: names and when each was set, never values. */
  async secrets(): Promise<SecretInfo[]> {
    return secrets(this.#node);
  }

  /** Removes a secret; false when there was none. */
  async deleteSecret(name: string): Promise<boolean> {
    return deleteSecret(this.#node, name);
  }

  // --- logs --------------------------------------------------------------------------------------

  /**
   * A function's own log, oldest first — hook output, runner lines, lifecycle, error detail (admin):
   * the last `limit` entries (of one version; from `since`, ms since the epoch).
   *
   * @example
   * for (const e of await hearth.logs('tabular-mlp', { level: 'error', limit: 20 }))
   *   console.log(new Date(e.at).toISOString(), e.msg, e.requestId ?? '');
   */
  async logs(name: string, options: LogsOptions = {}): Promise<FunctionLogEntry[]> {
    return logs(this.#node, name, options);
  }

  /**
   * A function's log followed live (server-sent events): the last `limit` entries, then every new
   * one, until `signal` aborts or the node ends the stream (it drains).
   *
   * @example
   * const stop = new AbortController();
   * setTimeout(() => stop.abort(), 60_000); // a minute of it
   * for await (const e of hearth.followLogs('tabular-mlp', { limit: 10, signal: stop.signal }))
   *   console.log(e.level, e.msg);
   */
  followLogs(name: string, options: LogsOptions & { signal?: AbortSignal } = {}): AsyncGenerator<FunctionLogEntry> {
    return followLogs(this.#node, name, options);
  }

  // --- function URLs -----------------------------------------------------------------------------

  /**
   * Calls a function and waits for its response.
   *
   * @example
   * import { readFile } from 'node:fs/promises';
   *
   * const answer = await hearth.invoke('text-sentiment', { text: 'a wonderful film' }, { timeoutMs: 5000 });
   * console.log(answer.version, answer.json());
   * // Bytes go as application/octet-stream unless contentType says otherwise.
   * const labels = await hearth.invoke('image-classifier', await readFile('cat.jpg'), { contentType: 'image/jpeg' });
   */
  async invoke(name: string, data: unknown, options: InvokeOptions = {}): Promise<InvokeResult> {
    return invoke(this.#node, name, data, options);
  }

  /**
   * Submits an async invocation: `{ id, status, statusUrl }` at once; `webhook` hears the outcome.
   *
   * @example
   * const row = Array.from({ length: 1024 }, (_, i) => Math.sin(i) / 10); // tabular-mlp takes 1024 numbers a row
   * const job = await hearth.waitForJob((await hearth.invokeAsync('tabular-mlp', { row })).id);
   * console.log(job.status, job.result?.json); // succeeded { … }
   */
  invokeAsync(name: string, data: unknown, options: InvokeOptions & { webhook?: string } = {}): Promise<JobAccepted> {
    return invokeAsync(this.#node, name, data, options);
  }

  // --- jobs --------------------------------------------------------------------------------------

  /**
   * Your jobs (an admin key: everyone's), newest first, without results; `next` goes on from there.
   *
   * @example
   * const page = await hearth.jobs({ status: 'failed', function: 'tabular-mlp', limit: 20 });
   * for (const j of page.jobs) console.log(j.id, j.error?.code);
   * const older = page.next ? await hearth.jobs({ status: 'failed', before: page.next }) : undefined;
   */
  jobs(query: JobsQuery = {}): Promise<JobList> {
    return jobs(this.#node, query);
  }

  job(id: string): Promise<JobInfo> {
    return job(this.#node, id);
  }

  /** A finished job's result: its own bytes and content type, as the synchronous call answers. */
  async jobResult(id: string): Promise<{ contentType: string; body: Uint8Array }> {
    return jobResult(this.#node, id);
  }

  /**
   * A function over many inputs, as async jobs with at most `concurrency` in flight: the outcomes in
   * input order, one per input, failures included (a failure never stops the rest).
   *
   * @example
   * const inputs = [1, 2, 3].map((k) => ({ row: Array.from({ length: 1024 }, (_, i) => Math.sin(i * k) / 10) }));
   * const outcomes = await hearth.map('tabular-mlp', inputs, { concurrency: 8, keyPrefix: 'nightly-2026-12-05' });
   * for (const o of outcomes) console.log(o.index, o.ok ? o.output : o.error.message);
   */
  async map(name: string, inputs: readonly unknown[], options: MapOptions = {}): Promise<MapOutcome[]> {
    return map(this, name, inputs, options);
  }

  /** Polls a job until it succeeds or fails (or `timeoutMs` passes). */
  async waitForJob(id: string, options: WaitOptions = {}): Promise<JobInfo> {
    return waitForJob(this, id, options);
  }

  // --- KServe v2 -------------------------------------------------------------------------------------

  /**
   * Raw tensors in, raw tensors out (no hooks), over Triton's binary tensor extension.
   *
   * @example
   * const image = new Float32Array(3 * 224 * 224).fill(0.5); // a 1×3×224×224 tensor, channels first
   * const out = await hearth.infer('triton-resnet', { INPUT__0: { dtype: 'FP32', shape: [1, 3, 224, 224], data: image } });
   * console.log(out.OUTPUT__0!.shape); // [1, 1000]
   */
  async infer(
    name: string,
    inputs: Record<string, Tensor>,
    options: InferOptions = {},
  ): Promise<Record<string, InferOutput>> {
    return infer(this.#node, name, inputs, options);
  }
}
