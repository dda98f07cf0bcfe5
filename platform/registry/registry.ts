/**
 * The function registry port: functions, their immutable numbered versions, and the traffic split.
 */
import type { Canary } from '../../sdk/api/index.js';
import { ConflictError, FunctionNotFoundError, InvalidInputError, VersionNotFoundError } from '../../sdk/errors.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import { FUNCTION_NAME } from '../../sdk/spec/function-spec.js';
import { DEFAULT_TENANT } from '../config/index.js';

export type VersionStatus = 'pending' | 'ready' | 'failed';

export interface FunctionVersion {
  version: number;
  spec: FunctionSpec;
  /** sha256 of the model file and, if any, of the bundled hook and of the example file (the smoke request). */
  artifacts: { model: string; hook?: string; example?: string };
  createdAt: string;
  status: VersionStatus;
  /** Why a version failed to load (or, pending, what it waits for): the text people read. */
  reason?: string;
  /** Cluster mode: pending until a node with a GPU loads it (the node that took the deploy has none). */
  waitsFor?: 'gpu';
  /** With waitsFor: once it is loaded the split stays as it is (the deploy's keepTraffic). */
  keepTraffic?: boolean;
  /**
   * A canary rolled the traffic back from this version (canary.ts), `reason` saying why; both are
   * cleared when it takes traffic again. Its status stays `ready` (it can: `hearth traffic`); the
   * API shows it `rolled-back` (shownVersion).
   */
  rolledBackBy?: 'canary';
  /** The tenant whose secrets it binds: its function's when it was made (absent: the default tenant). */
  tenant?: string;
}

/** What a status change records beside the status and reason (a field left out is cleared). */
export type VersionState = Pick<FunctionVersion, 'waitsFor' | 'keepTraffic'>;

/** A version's new status, with why (a failure's headline, what it waits for) and its typed state. */
export type StatusChange = [status: VersionStatus, reason?: string, state?: VersionState];

export interface FunctionRecord {
  name: string;
  /** Whose function it is: the tenant of the key that first deployed it (absent: the default tenant). */
  tenant?: string;
  createdAt: string;
  versions: FunctionVersion[];
  /** Version → weight; the weights need not sum to 100. Empty until a version is ready. */
  traffic: Record<string, number>;
  /** The split before the last change of `traffic` (what a rollback returns to). */
  previousTraffic?: Record<string, number>;
  /** The latest canary (function-service's canary.ts): watching, or what it decided. */
  canary?: Canary;
}

export interface Registry {
  readonly kind: 'fs' | 'redis';
  /**
   * Resolves once it takes calls (Redis: its connection is up), or after `waitMs` if it does not
   * (its calls then fail fast until it does). Absent: it always does.
   */
  opened?(waitMs: number): Promise<void>;
  /**
   * Adds version n+1 of spec.name (creating the function, `by`'s tenant's), status pending, traffic
   * unchanged; another tenant's function is a ConflictError unless `by` is an admin.
   */
  createVersion(spec: FunctionSpec, artifacts: FunctionVersion['artifacts'], by?: Deployer): Promise<FunctionVersion>;
  get(name: string): Promise<FunctionRecord | undefined>;
  list(): Promise<FunctionRecord[]>;
  setStatus(name: string, version: number, ...change: StatusChange): Promise<FunctionRecord>;
  /**
   * Replaces the traffic split; every weighted version must exist and be ready. `previous` is what a
   * rollback returns to (default: the split replaced).
   */
  setTraffic(name: string, weights: Record<string, number>, previous?: Record<string, number>): Promise<FunctionRecord>;
  /** Replaces a version's scaling settings (not a new version: the model and the split stay). */
  setScaling(name: string, version: number, scaling: FunctionSpec['scaling']): Promise<FunctionRecord>;
  /**
   * Replaces the function's latest canary (a new one, or the same one decided); one decided
   * `rolled-back` marks its version `rolledBackBy: 'canary'` in the same write.
   */
  setCanary(name: string, canary: Canary): Promise<FunctionRecord>;
  delete(name: string): Promise<boolean>;
  close(): Promise<void>;
}

/** Who deploys a version: the tenant it deploys as, and whether it may deploy over any tenant's function. */
export interface Deployer {
  tenant: string;
  admin: boolean;
}

/** The tenant a function (or a version) belongs to. */
export const tenantOf = (owned: { tenant?: string }): string => owned.tenant ?? DEFAULT_TENANT;

/** `{ tenant }` to store: nothing for the default tenant, so records read as they did before tenants. */
const stored = (tenant: string) => (tenant === DEFAULT_TENANT ? {} : { tenant });

/**
 * A new pending version of `spec`, appended to its record (a new record, `by`'s tenant's, for a new
 * name); a name another tenant holds is a ConflictError, unless `by` is an admin.
 */
export function applyNewVersion(
  record: FunctionRecord | undefined,
  spec: FunctionSpec,
  artifacts: FunctionVersion['artifacts'],
  by: Deployer = { tenant: DEFAULT_TENANT, admin: true },
): { record: FunctionRecord; version: FunctionVersion } {
  const now = new Date().toISOString();
  if (record && tenantOf(record) !== by.tenant && !by.admin)
    throw new ConflictError(`the name ${spec.name} is taken by another tenant's function: choose another`, {
      reason: 'name',
    });
  const current = record ?? { name: spec.name, ...stored(by.tenant), createdAt: now, versions: [], traffic: {} };
  const version: FunctionVersion = {
    version: (current.versions.at(-1)?.version ?? 0) + 1,
    spec,
    artifacts,
    createdAt: now,
    status: 'pending',
    ...stored(tenantOf(current)),
  };
  return { record: { ...current, versions: [...current.versions, version] }, version };
}

/** The checks every implementation applies to a traffic change, on the record it is about to write. */
export function applyTraffic(
  record: FunctionRecord,
  weights: Record<string, number>,
  previous?: Record<string, number>,
): FunctionRecord {
  const entries = Object.entries(weights);
  if (entries.length === 0)
    throw new InvalidInputError('traffic needs at least one version with a weight', { reason: 'traffic' });
  let total = 0;
  const traffic: Record<string, number> = {};
  for (const [v, w] of entries) {
    const version = record.versions.find((x) => String(x.version) === v);
    if (!version) throw new VersionNotFoundError(`${record.name} has no version ${v}`);
    if (version.status !== 'ready' && w > 0)
      throw new ConflictError(
        `${record.name} v${v} is ${version.status}${version.reason ? ` (${version.reason})` : ''}: only ready versions take traffic (see \`hearth versions ${record.name}\`)`,
        { reason: 'traffic' },
      );
    if (!Number.isFinite(w) || w < 0)
      throw new InvalidInputError(`the weight of v${v} must be a number ≥ 0`, { reason: 'traffic' });
    if (w > 0) traffic[v] = w;
    total += w;
  }
  if (total <= 0) throw new InvalidInputError('traffic weights must add up to more than 0', { reason: 'traffic' });
  const same = JSON.stringify(sorted(traffic)) === JSON.stringify(sorted(record.traffic));
  const previousTraffic =
    previous ?? (same || Object.keys(record.traffic).length === 0 ? record.previousTraffic : record.traffic);
  // A version a canary rolled back that takes traffic again is no longer rolled back.
  const versions = record.versions.map((v) => (v.rolledBackBy && traffic[v.version] ? withoutRollback(v) : v));
  return { ...record, versions, traffic, ...(previousTraffic ? { previousTraffic } : {}) };
}

const withoutRollback = ({ rolledBackBy: _, reason: _r, ...v }: FunctionVersion): FunctionVersion => v;

const sorted = (split: Record<string, number>) => Object.entries(split).sort(([a], [b]) => Number(a) - Number(b));

export function applyScaling(
  record: FunctionRecord,
  version: number,
  scaling: FunctionSpec['scaling'],
): FunctionRecord {
  if (!record.versions.some((v) => v.version === version))
    throw new VersionNotFoundError(`${record.name} has no version ${version}`);
  return {
    ...record,
    versions: record.versions.map((v) => (v.version === version ? { ...v, spec: { ...v.spec, scaling } } : v)),
  };
}

export function applyStatus(record: FunctionRecord, version: number, ...change: StatusChange): FunctionRecord {
  const [status, reason, state] = change;
  const found = record.versions.find((v) => v.version === version);
  if (!found) throw new VersionNotFoundError(`${record.name} has no version ${version}`);
  return {
    ...record,
    versions: record.versions.map((v) => (v.version === version ? { ...stateless(v), status, reason, ...state } : v)),
  };
}

const stateless = ({ waitsFor: _w, keepTraffic: _k, ...v }: FunctionVersion): FunctionVersion => v;

/** The function's latest canary; one that rolled back marks its version (`rolledBackBy`, and why). */
export function applyCanary(record: FunctionRecord, canary: Canary): FunctionRecord {
  if (canary.state !== 'rolled-back') return { ...record, canary };
  const reason = `its canary rolled it back${canary.reason ? `: ${canary.reason}` : ''}`;
  const versions = record.versions.map((v) =>
    v.version === canary.version ? { ...v, rolledBackBy: 'canary' as const, reason } : v,
  );
  return { ...record, versions, canary };
}

/** A version as the API shows it: one its canary rolled back is `rolled-back` (with why), not `ready`. */
export function shownVersion<V extends Pick<FunctionVersion, 'status' | 'rolledBackBy'>>(
  v: V,
): Omit<V, 'status'> & { status: string } {
  return v.rolledBackBy && v.status === 'ready' ? { ...v, status: 'rolled-back' } : v;
}

/** A name as an error may show it: a valid one as is, else escaped and cut to 200 characters. */
function shown(name: string): string {
  return FUNCTION_NAME.test(name) ? name : JSON.stringify(name).slice(1, -1).slice(0, 200);
}

/** Triton's own words for an unknown model, which its clients and tests look for. */
export function notFound(name: string, version?: number): FunctionNotFoundError {
  return new FunctionNotFoundError(
    `Request for unknown model: '${shown(name)}'${version === undefined ? '' : ` version ${version}`} is not found`,
  );
}

/**
 * The same errors in a function URL's words (`/fn/NAME`), where Triton's "unknown model" would
 * send its caller looking for a model: an unknown function or version, and what lists them.
 */
export function inFunctionWords(name: string, version: number | undefined): (error: unknown) => never {
  return (error) => {
    if (error instanceof VersionNotFoundError && version !== undefined)
      throw new VersionNotFoundError(
        `function '${shown(name)}' has no version ${version} (hearth versions ${shown(name)} lists them)`,
      );
    if (error instanceof FunctionNotFoundError)
      throw new FunctionNotFoundError(`no function named '${shown(name)}' on this node (hearth ls lists them)`);
    throw error;
  };
}

/**
 * The one gate between a name a caller sent and a file path or Redis key: a name that breaks the
 * spec's rule cannot name a function, so it is not found (and never joined into anything).
 */
export function checkedName(name: string): string {
  if (!FUNCTION_NAME.test(name)) throw notFound(name);
  return name;
}

/** Picks a version by traffic weight; `random` in [0, 1). */
export function pickVersion(record: FunctionRecord, random = Math.random()): number | undefined {
  const entries = Object.entries(record.traffic).filter(([, w]) => w > 0);
  const total = entries.reduce((n, [, w]) => n + w, 0);
  if (total <= 0) return undefined;
  let at = random * total;
  for (const [v, w] of entries) {
    if (at < w) return Number(v);
    at -= w;
  }
  return Number(entries[entries.length - 1]![0]);
}
