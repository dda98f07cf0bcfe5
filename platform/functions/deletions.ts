/**
 * Functions deleted, for what a node keeps of a function by its name outside the functions' own
 * state (Triton's per-model trace settings): a delete made here, and — in a cluster, where each
 * node keeps its own — one made through another node, which this node learns of from its sweep of
 * the registry (a name gone, or created anew, since the last sweep).
 */
import type { FunctionRecord } from '../registry/index.js';

/** Hears `name` deleted; `createdAt` is the function of that name now, where one was created anew. */
export type DeletionListener = (name: string, createdAt?: string) => void;

export class Deletions {
  readonly #listeners: DeletionListener[] = [];
  /** Each function's creation as the last sweep listed it (undefined before the first). */
  #listed: Map<string, string> | undefined;

  /** Adds a listener (for the node's life). */
  listen(listener: DeletionListener): void {
    this.#listeners.push(listener);
  }

  /** A function deleted through this node. */
  deleted(name: string, createdAt?: string): void {
    this.#listed?.delete(name);
    for (const listener of this.#listeners) listener(name, createdAt);
  }

  /** The registry's functions as a cluster sweep read them: those gone or created anew since the last one were deleted. */
  listed(records: readonly Pick<FunctionRecord, 'name' | 'createdAt'>[]): void {
    const now = new Map(records.map((r) => [r.name, r.createdAt]));
    const before = this.#listed;
    this.#listed = now;
    if (!before) return;
    for (const [name, createdAt] of before) {
      const current = now.get(name);
      if (current !== createdAt) for (const listener of this.#listeners) listener(name, current);
    }
  }
}
