/**
 * The changes to a function's record that both backends make alike. Each is one read-change-write
 * of one record (`update`), which a backend makes safe its own way: the files registry queues its
 * writes, the Redis one runs each in a WATCH/MULTI transaction.
 */
import type { Canary } from '../../sdk/api/index.js';
import type { FunctionSpec } from '../../sdk/spec/function-spec.js';
import type { FunctionRecord, Registry, StatusChange } from './registry.js';
import { applyCanary, applyScaling, applyStatus, applyTraffic } from './registry.js';

export abstract class RegistryBase implements Pick<Registry, 'setStatus' | 'setTraffic' | 'setScaling' | 'setCanary'> {
  /** Changes the record of `name` (not found: FunctionNotFoundError) and returns it as written. */
  protected abstract update(name: string, change: (r: FunctionRecord) => FunctionRecord): Promise<FunctionRecord>;

  setStatus(name: string, version: number, ...change: StatusChange): Promise<FunctionRecord> {
    return this.update(name, (r) => applyStatus(r, version, ...change));
  }

  setTraffic(
    name: string,
    weights: Record<string, number>,
    previous?: Record<string, number>,
  ): Promise<FunctionRecord> {
    return this.update(name, (r) => applyTraffic(r, weights, previous));
  }

  setScaling(name: string, version: number, scaling: FunctionSpec['scaling']): Promise<FunctionRecord> {
    return this.update(name, (r) => applyScaling(r, version, scaling));
  }

  setCanary(name: string, canary: Canary): Promise<FunctionRecord> {
    return this.update(name, (r) => applyCanary(r, canary));
  }
}
