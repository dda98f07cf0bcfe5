/**
 * The KServe v2 / Open Inference Protocol with Triton's extensions, transport-neutral: what each
 * HTTP route (../http/kserve-routes.ts, ../http/hot/kserve-infer.ts) and gRPC method
 * (../grpc/kserve-methods.ts, ../grpc/infer-methods.ts) answers, as plain values. The transports
 * parse their wire format, call one method here, and write the answer back; errors are mapped once
 * per transport, and every call that runs a function is admitted once (./admission.ts).
 */

import { FunctionNotFoundError, InvalidInputError, PermissionDeniedError } from '../../sdk/errors.js';
import type { ArtifactStore } from '../artifacts/index.js';
import type { Caller } from '../caller/index.js';
import { allows, NO_KEYS } from '../caller/index.js';
import type { RepositoryEntry, ServingFunctions } from '../functions/serving.js';
import { servingFor } from '../functions/tenant-view.js';
import { LogSwitches } from '../log/index.js';
import { parseVersion as parseModelVersion } from '../registry/index.js';
import type { Admit } from './admission.js';
import { refuseUnlessReady } from './admission.js';
import type { InferAnswer, InferCall } from './infer.js';
import { inferCall } from './infer.js';
import type { LogSettingsAnswer, LogUpdate } from './logging.js';
import { logSettings } from './logging.js';
import { modelMetadata, serverExtensions } from './metadata.js';
import { modelConfig } from './model-config.js';
import type { LoadRequest } from './repository.js';
import { loadModel } from './repository.js';
import { clip } from './setting-bounds.js';
import type { SharedMemoryRegions } from './shared-memory.js';
import { modelStatistics } from './statistics.js';
import type { Trace, TraceSettingsAnswer, TraceUpdate } from './trace/index.js';
import { TRACE_DEFAULTS, Tracer } from './trace/index.js';

export interface KserveOptions {
  functions: ServingFunctions;
  /** Where a load's `file:` contents are stored. */
  artifacts: Pick<ArtifactStore, 'stat' | 'put' | 'claim'>;
  /** False while the node starts or drains. */
  ready: () => boolean;
  /**
   * Whether a request may go on: undefined when the node serves, else a promise that settles once
   * it does (a starting node holds requests: platform/node/readiness.ts). Without it, a node that is not
   * ready refuses.
   */
  admit?: Admit;
  /** The server's version, in its metadata. */
  version: string;
  /** System shared memory regions (Triton's extension), per caller. */
  sharedMemory: SharedMemoryRegions;
  /** Whether this node has a CUDA device (a config's instance kind says so). */
  cudaAvailable: () => boolean;
  /** Triton's trace extension: its settings and the traces it writes (without one: none can be written). */
  tracer?: Tracer;
  /** Triton's logging extension: the node logger's switches. */
  logSwitches?: LogSwitches;
}

export class Kserve {
  readonly #o: KserveOptions;
  readonly #admit: Admit;
  readonly #caller: Caller;

  constructor(options: KserveOptions, caller: Caller = NO_KEYS) {
    this.#o = {
      ...options,
      tracer: options.tracer ?? new Tracer(undefined, TRACE_DEFAULTS),
      logSwitches: options.logSwitches ?? new LogSwitches(),
    };
    this.#admit = options.admit ?? refuseUnlessReady(options.ready);
    this.#caller = caller;
  }

  /**
   * The protocol as `caller` may use it: the functions of its tenant only (../functions/tenant-view.ts),
   * others not found as if they did not exist. Every transport asks through one.
   */
  as(caller: Caller): Kserve {
    return new Kserve({ ...this.#o, admit: this.#admit, functions: servingFor(caller, this.#o.functions) }, caller);
  }

  get sharedMemory(): SharedMemoryRegions {
    return this.#o.sharedMemory;
  }

  ready(): boolean {
    return this.#o.ready();
  }

  /**
   * Admission (./admission.ts), once per call, at its transport's intake: undefined when the node
   * serves (no promise on the hot path), else a promise that settles when the call may go on.
   */
  admit(options: { deadline?: number; signal?: AbortSignal }): Promise<void> | undefined {
    return this.#admit(options);
  }

  serverMetadata(): { name: string; version: string; extensions: string[] } {
    return { name: 'hearth', version: this.#o.version, extensions: serverExtensions(this.#o.sharedMemory.enabled) };
  }

  async modelMetadata(name: string, version?: string): Promise<object> {
    const { functions } = this.#o;
    const record = await functions.get(name);
    const v = await functions.resolve(name, parseModelVersion(version));
    return modelMetadata(
      v.spec,
      record.versions.filter((x) => x.status === 'ready').map((x) => x.version),
    );
  }

  async modelReady(name: string, version?: string): Promise<boolean> {
    return this.#o.ready() && (await this.#o.functions.modelReady(name, parseModelVersion(version)));
  }

  async modelConfig(name: string, version?: string): Promise<Record<string, unknown>> {
    const v = await this.#o.functions.resolve(name, parseModelVersion(version));
    return modelConfig(v.spec, { cudaAvailable: this.#o.cudaAvailable() });
  }

  /** Of one version, of one model's ready versions, or (no name) of every model's. */
  async statistics(name?: string, version?: string): Promise<{ model_stats: Record<string, unknown>[] }> {
    const found = await this.#o.functions.statistics(name || undefined, parseModelVersion(version));
    return { model_stats: found.map((s) => modelStatistics(s.name, s.version, s.counters)) };
  }

  repositoryIndex(): Promise<RepositoryEntry[]> {
    return this.#o.functions.repositoryIndex();
  }

  load(name: string, request: LoadRequest): Promise<void> {
    return loadModel({ ...this.#o, tenant: this.#caller.tenant }, name, request);
  }

  unload(name: string): Promise<void> {
    return this.#o.functions.unload(name);
  }

  /** An admitted call's infer (Kserve.admit first); REQUEST_START and REQUEST_END of its trace, if sampled. */
  infer(call: InferCall): Promise<InferAnswer> {
    const { trace } = call;
    if (!trace) return inferCall(this.#o.functions, call);
    trace.capture('REQUEST_START');
    return inferCall(this.#o.functions, call).then(
      (answer) => {
        trace.identify(Number(answer.model_version), call.id);
        trace.capture('REQUEST_END');
        return answer;
      },
      (error: unknown) => {
        trace.capture('REQUEST_END');
        throw error;
      },
    );
  }

  /** Whether any trace setting traces now (a transport's cheap test before it stamps a call). */
  tracing(): boolean {
    return this.#o.tracer!.settings.tracing;
  }

  /**
   * A trace of this request for `model`, if the trace settings sample it (./trace) — once `model`
   * resolves in the caller's view: another tenant's, or a name that names no function, is never
   * sampled and spends none of a setting's trace_count (no record written, no count an oracle of
   * which names carry settings). A transport calls it only while tracing() (no lookup otherwise).
   */
  async startTrace(model: string): Promise<Trace | undefined> {
    const record = await this.#o.functions.get(model).catch(() => undefined);
    return record && this.#o.tracer!.start(model, record.createdAt);
  }

  /**
   * Triton's trace extension: the settings of `model` (one the caller sees; else "unknown", as one
   * that does not exist) or the global ones, after `update`. A change of the global settings is
   * the node's, an admin's; a model's is its tenant's (a deploy key's, as the repository extension).
   * A setting left for a name whose function is gone (a delete this node has not heard of yet) an
   * admin still reads and clears.
   */
  async traceSetting(model: string | undefined, update?: TraceUpdate): Promise<TraceSettingsAnswer> {
    let createdAt: string | undefined;
    if (model !== undefined) {
      const record = await this.#o.functions.get(model).catch((error: unknown) => {
        if (!(error instanceof FunctionNotFoundError)) throw error;
        if (allows(this.#caller, 'admin') && this.#o.tracer!.hasOwn(model)) return undefined;
        throw new InvalidInputError(`Request for unknown model : ${clip(model, 200)}`);
      });
      createdAt = record?.createdAt;
    } else if (update && update.size > 0) this.#manageNode("change the node's trace settings");
    return this.#o.tracer!.setting(model, update, createdAt);
  }

  /** Triton's logging extension: the node's log settings, after `update` (an admin's). */
  logSettings(update?: LogUpdate): LogSettingsAnswer {
    if (update && update.size > 0) this.#manageNode("change the node's log settings");
    return logSettings(this.#o.logSwitches!, update);
  }

  /** Settles once every trace that ended so far is written; close() writes what is pending. */
  get tracer(): Pick<Tracer, 'flushed' | 'close'> {
    return this.#o.tracer!;
  }

  #manageNode(what: string): void {
    if (!allows(this.#caller, 'admin'))
      throw new PermissionDeniedError(`this API key (scope ${this.#caller.scope}) may not ${what} (needs scope admin)`);
  }
}
