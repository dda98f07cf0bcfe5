/**
 * The seam between the transports (HTTP, gRPC, the KServe core) and the functions of this node:
 * what a request needs — find a version, call it, ask after it, load it — and no more.
 * FunctionService implements it; the management API uses the service's wider surface.
 */
import type { HookTensors } from '../../sdk/hook.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import type { InvokeOptions, InvokeResponse, PoolCounters } from '../../runtime/index.js';
import type { FunctionRecord, FunctionVersion } from '../registry/index.js';

/** A version's counters (Triton's statistics). */
export interface VersionCounters {
  name: string;
  version: number;
  counters: PoolCounters;
}

/** One entry of Triton's repository index. */
export interface RepositoryEntry {
  name: string;
  version: string;
  state: 'READY' | 'UNAVAILABLE' | 'UNLOADED';
  reason?: string;
}

export interface ServingFunctions {
  get(name: string): Promise<FunctionRecord>;
  /** The version a request goes to: the one named, else one picked by the traffic weights. */
  resolve(name: string, version?: number): Promise<FunctionVersion>;
  /** A request through the version's hooks. */
  invoke(
    name: string,
    version: number | undefined,
    request: { body: Uint8Array; contentType: string },
    options?: InvokeOptions,
  ): Promise<InvokeResponse & { version: number }>;
  /** Tensors straight to the model (KServe v2): no hooks. */
  infer(
    name: string,
    version: number | undefined,
    tensors: HookTensors,
    options?: InvokeOptions,
  ): Promise<{ outputs: HookTensors; version: FunctionVersion }>;
  modelReady(name: string, version?: number): Promise<boolean>;
  statistics(name?: string, version?: number): Promise<VersionCounters[]>;
  repositoryIndex(): Promise<RepositoryEntry[]>;
  /** Loads a version's pool now (Triton's repository load). */
  load(name: string, version?: number): Promise<void>;
  unload(name: string, version?: number): Promise<void>;
  /** A new version (a repository load with a configuration override makes one). */
  deploy(
    spec: FunctionSpec,
    artifacts: FunctionVersion['artifacts'],
    options?: { keepTraffic?: boolean },
  ): Promise<FunctionVersion>;
  /**
   * Where the whole message of a failed call goes (a model's traceback): the function's own log,
   * for its admins; the caller gets the headline.
   */
  errorDetail(fn: string | undefined, requestId: string | undefined): (code: string, detail: string) => void;
}
