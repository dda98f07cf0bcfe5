/**
 * The functions as one caller may see them: its tenant's (an invoke key that names functions: those
 * only; an admin: all). Every transport asks through a view, so there is one place that decides —
 * a function the caller may not see is not found, in the same words as one that does not exist
 * (its name is not told apart from a free one), and lists hold only what it sees. A deploy made
 * through a view is its caller's: a new function is its tenant's, and another tenant's is refused.
 *
 * An admin's view passes every call through unchecked (the hot path pays nothing); any other pays
 * one read of the function's record from the short cache (records.ts) per call.
 */
import type { Caller } from '../caller/index.js';
import type { FunctionRecord } from '../registry/index.js';
import { inFunctionWords, notFound, tenantOf } from '../registry/index.js';
import type { ManagedFunctions, ServingFunctions } from './serving.js';

/** Whether `caller` may see (call, and with a deploy key manage) the function `record`. */
export function sees(caller: Caller, record: Pick<FunctionRecord, 'name' | 'tenant'>): boolean {
  if (caller.scope === 'admin') return true;
  if (tenantOf(record) !== caller.tenant) return false;
  return caller.functions === undefined || caller.functions.includes(record.name);
}

/**
 * The function a failed request's detail may be logged to (its own log, read by its tenant): `name`
 * if the caller sees it, else none — a caller refused before it was known, or another tenant's,
 * writes nothing into a function's log.
 */
export async function logsTo(
  caller: Caller | undefined,
  fns: Pick<ServingFunctions, 'get'>,
  name: string | undefined,
): Promise<string | undefined> {
  if (caller === undefined || name === undefined) return undefined;
  if (caller.scope === 'admin') return name;
  return fns.get(name).then(
    (record) => (sees(caller, record) ? name : undefined),
    () => undefined,
  );
}

/** What a request may reach of the functions: `fns` as `caller` sees them. */
export function servingFor(caller: Caller, fns: ServingFunctions): ServingFunctions {
  return new ServingView(caller, fns);
}

/** What the management API may reach: `fns` as `caller` sees them. */
export function managedFor(caller: Caller, fns: ManagedFunctions): ManagedFunctions {
  return new ManagedView(caller, fns);
}

class ServingView<F extends ServingFunctions> implements ServingFunctions {
  protected readonly caller: Caller;
  protected readonly fns: F;
  /** Sees every function: nothing to check. */
  protected readonly all: boolean;

  constructor(caller: Caller, fns: F) {
    this.caller = caller;
    this.fns = fns;
    this.all = caller.scope === 'admin';
  }

  /** The function's record, if the caller sees it; else not found, as a name nobody holds. */
  async get(name: string): Promise<FunctionRecord> {
    const record = await this.fns.get(name);
    if (!this.all && !sees(this.caller, record)) throw notFound(name);
    return record;
  }

  /** Whether the caller sees a function of that name (false: none, or not its). */
  protected visible(name: string): Promise<boolean> {
    return this.get(name).then(
      () => true,
      () => false,
    );
  }

  async resolve(name: string, version?: number) {
    if (!this.all) await this.get(name);
    return this.fns.resolve(name, version);
  }

  async invoke(...a: Parameters<ServingFunctions['invoke']>) {
    if (!this.all) await this.get(a[0]).catch(inFunctionWords(a[0], a[1]));
    return this.fns.invoke(...a);
  }

  async infer(...a: Parameters<ServingFunctions['infer']>) {
    if (!this.all) await this.get(a[0]);
    return this.fns.infer(...a);
  }

  async modelReady(name: string, version?: number) {
    if (!this.all && !(await this.visible(name))) return false;
    return this.fns.modelReady(name, version);
  }

  async statistics(name?: string, version?: number) {
    if (this.all) return this.fns.statistics(name, version);
    if (name !== undefined) await this.get(name);
    return this.#mine(await this.fns.statistics(name, version));
  }

  async repositoryIndex() {
    const index = await this.fns.repositoryIndex();
    return this.all ? index : this.#mine(index);
  }

  async load(name: string, version?: number) {
    if (!this.all) await this.get(name);
    return this.fns.load(name, version);
  }

  async unload(name: string, version?: number) {
    if (!this.all) await this.get(name);
    return this.fns.unload(name, version);
  }

  /** A new version, the caller's: its tenant's function, or (admin) the function's own tenant's. */
  deploy(...[spec, artifacts, options]: Parameters<ServingFunctions['deploy']>) {
    const by = { tenant: this.caller.tenant, admin: this.all };
    return this.fns.deploy(spec, artifacts, { ...options, by });
  }

  errorDetail(fn: string | undefined, requestId: string | undefined) {
    return this.fns.errorDetail(fn, requestId);
  }

  /** The entries of functions the caller sees. */
  async #mine<T extends { name: string }>(entries: T[]): Promise<T[]> {
    const seen = await Promise.all(entries.map((e) => this.visible(e.name)));
    return entries.filter((_, i) => seen[i]);
  }
}

class ManagedView extends ServingView<ManagedFunctions> implements ManagedFunctions {
  readonly series: ManagedFunctions['series'];
  readonly logs: ManagedFunctions['logs'];

  constructor(caller: Caller, fns: ManagedFunctions) {
    super(caller, fns);
    // Read by name, synchronously: each route reads the function's record through the view first.
    this.series = fns.series;
    this.logs = fns.logs;
  }

  async list() {
    const records = await this.fns.list();
    return this.all ? records : records.filter((r) => sees(this.caller, r));
  }

  health(record: FunctionRecord) {
    return this.fns.health(record);
  }

  canaryOf(record: FunctionRecord) {
    return this.fns.canaryOf(record);
  }

  async delete(name: string) {
    if (!this.all) await this.get(name);
    return this.fns.delete(name);
  }

  async setTraffic(name: string, weights: Record<string, number>) {
    if (!this.all) await this.get(name);
    return this.fns.setTraffic(name, weights);
  }

  async rollback(name: string) {
    if (!this.all) await this.get(name);
    return this.fns.rollback(name);
  }

  async setScaling(...a: Parameters<ManagedFunctions['setScaling']>) {
    if (!this.all) await this.get(a[0]);
    return this.fns.setScaling(...a);
  }

  refreshStats() {
    return this.fns.refreshStats();
  }

  // Node-wide views: asked by admin routes, or filtered by a function the view has seen.
  pools() {
    return this.fns.pools();
  }

  clusterPools() {
    return this.fns.clusterPools();
  }

  nodes() {
    return this.fns.nodes();
  }
}
