/**
 * Idempotency keys for synchronous function calls: a repeated `Idempotency-Key` (for the same
 * caller and function) gets the response of the first call — awaited if it is still running — for
 * `ttlMs`; the same key with a different request is refused (422). Keys are the caller's own: the
 * cache key includes who sent it. Failed calls are not remembered, so they can be retried. Kept in
 * this node's memory; the asynchronous invocations of cluster mode keep theirs in Redis.
 */
import { IdempotencyConflictError } from '../../sdk/errors.js';

export interface StoredResponse {
  body: Uint8Array;
  contentType: string;
  version: number;
}

export class IdempotencyCache {
  readonly #entries = new Map<string, { at: number; request: string; value: Promise<StoredResponse> }>();
  readonly #ttlMs: number;
  readonly #max: number;

  constructor(ttlMs = 10 * 60_000, max = 10_000) {
    this.#ttlMs = ttlMs;
    this.#max = max;
  }

  /** The first call's response for `key` (which must have been for the same `request` hash), or `run()`'s. */
  run(
    key: string,
    request: string,
    run: () => Promise<StoredResponse>,
  ): { value: Promise<StoredResponse>; replayed: boolean } {
    const now = Date.now();
    const found = this.#entries.get(key);
    if (found && now - found.at < this.#ttlMs) {
      if (found.request !== request)
        throw new IdempotencyConflictError(
          'this Idempotency-Key was used for a different request; use a new key for a new request',
        );
      return { value: found.value, replayed: true };
    }
    const value = run();
    this.#entries.set(key, { at: now, request, value });
    value.catch(() => this.#entries.delete(key));
    if (this.#entries.size > this.#max) {
      for (const [k, e] of this.#entries) {
        if (this.#entries.size <= this.#max && now - e.at < this.#ttlMs) break;
        this.#entries.delete(k);
      }
    }
    return { value, replayed: false };
  }
}
