/**
 * Traffic and scaling of a function's versions: the split (set by hand, by a deploy, by a canary),
 * a rollback to the split before, and scaling changed in place (`hearth scale`) — which the live
 * pools and the autoscaler follow through the per-version overrides kept here.
 */
import { ConflictError, VersionNotFoundError } from '../../sdk/errors.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import { parseSpec, versionKey } from '../../sdk/spec/index.js';
import type { FunctionRecord, Registry } from '../registry/index.js';
import type { PoolSet } from './pool-set.js';
import type { RecordCache } from './records.js';

type Scaling = FunctionSpec['scaling'];

export interface TrafficParts {
  registry: Registry;
  records: Pick<RecordCache, 'forget' | 'get'>;
  pools: Pick<PoolSet, 'get' | 'stop' | 'values' | 'warm'>;
}

export class TrafficControl {
  readonly #o: TrafficParts;
  /** Versions whose scaling changed after their pool started (`hearth scale`), by versionKey. */
  readonly #scaling = new Map<string, Scaling>();

  constructor(parts: TrafficParts) {
    this.#o = parts;
  }

  /** A version's scaling as changed in place (what the autoscaler follows), if it was. */
  scalingOf(name: string, version: number): Scaling | undefined {
    return this.#scaling.get(versionKey(name, version));
  }

  /** Replaces the traffic split of a function (`previous`: what a rollback returns to, if not the split replaced). */
  async setTraffic(
    name: string,
    weights: Record<string, number>,
    previous?: Record<string, number>,
  ): Promise<FunctionRecord> {
    const { registry, records, pools } = this.#o;
    records.forget(name);
    const before = (await registry.get(name))?.traffic ?? {};
    let record: FunctionRecord;
    try {
      record = await registry.setTraffic(name, weights, previous);
    } finally {
      records.forget(name);
    }
    // A version that lost all its traffic drains here and scales to zero (a request that names it
    // still cold-starts it).
    for (const [v, w] of Object.entries(before)) {
      if (w > 0 && !((record.traffic[v] ?? 0) > 0)) await pools.stop(name, Number(v), true);
    }
    return record;
  }

  /**
   * Back to the split before the last traffic change: after a deploy, the version that served
   * before it; after a canary split, the split before it. A second rollback undoes the first.
   */
  async rollback(name: string): Promise<{ record: FunctionRecord; from: Record<string, number> }> {
    this.#o.records.forget(name);
    const record = await this.#o.records.get(name);
    const previous = record.previousTraffic;
    if (!previous || Object.keys(previous).length === 0)
      throw new ConflictError(
        `${name} has had one traffic split since it was deployed: nothing to roll back to (set one with \`hearth traffic ${name} VERSION=WEIGHT\`)`,
        { reason: 'rollback' },
      );
    for (const v of Object.keys(previous)) {
      const version = record.versions.find((x) => String(x.version) === v);
      if (version?.status !== 'ready')
        throw new ConflictError(
          `${name}'s split before the last change sent traffic to v${v}, which is ${version ? version.status : 'deleted'}: set the traffic with \`hearth traffic ${name} VERSION=WEIGHT\``,
          { reason: 'rollback' },
        );
    }
    return { record: await this.setTraffic(name, previous), from: record.traffic };
  }

  /**
   * Changes the scaling of a version in place (`version`), or of every version taking traffic:
   * scaling is not a new version of the model, so the split stays. Live pools follow at once.
   */
  async setScaling(
    name: string,
    change: Partial<Scaling>,
    version?: number,
  ): Promise<{ version: number; scaling: Scaling }[]> {
    const { registry, records, pools } = this.#o;
    records.forget(name);
    const record = await records.get(name);
    const targets =
      version === undefined
        ? record.versions.filter((v) => (record.traffic[v.version] ?? 0) > 0)
        : record.versions.filter((v) => v.version === version);
    if (version !== undefined && targets.length === 0)
      throw new VersionNotFoundError(`${name} has no version ${version}`);
    if (targets.length === 0)
      throw new ConflictError(`${name} has no version taking traffic: name one with --version`, { reason: 'scaling' });
    const changed: { version: number; scaling: Scaling }[] = [];
    for (const v of targets) {
      // The merged settings go through the spec's own rules (min ≤ max, instances.count ≤ max).
      const scaling = parseSpec({ ...v.spec, scaling: { ...v.spec.scaling, ...change } }).scaling;
      await registry.setScaling(name, v.version, scaling);
      this.#scaling.set(versionKey(name, v.version), scaling);
      changed.push({ version: v.version, scaling });
    }
    records.forget(name);
    // A version that now keeps instances warm starts (as at node start) if it takes traffic.
    for (const { version: v, scaling } of changed) {
      const found = (await records.get(name)).versions.find((x) => x.version === v);
      if (found?.status === 'ready' && scaling.minInstances > 0 && (record.traffic[v] ?? 0) > 0)
        pools.warm(name, found);
    }
    return changed;
  }

  /** Cluster mode: scaling changed on another node reaches this node's live pools (the registry sweep). */
  async refreshScaling(): Promise<void> {
    const names = new Set([...this.#o.pools.values()].map((p) => p.spec.name));
    for (const name of names) {
      const record = await this.#o.registry.get(name);
      for (const v of record?.versions ?? []) {
        const key = versionKey(name, v.version);
        const known = this.#scaling.get(key);
        if (JSON.stringify(known) !== JSON.stringify(v.spec.scaling) && this.#o.pools.get(name, v.version))
          this.#scaling.set(key, v.spec.scaling);
      }
    }
  }

  /** A deleted function's overrides go. */
  forget(name: string, versions: readonly number[]): void {
    for (const v of versions) this.#scaling.delete(versionKey(name, v));
  }
}
