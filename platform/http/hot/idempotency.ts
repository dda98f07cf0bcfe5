/**
 * Idempotency keys for synchronous function calls: a repeated `Idempotency-Key` (for the same
 * caller and function) gets the response of the first call — awaited if it is still running — for
 * `ttlMs`; the same key with a different request is refused (422). Keys are the caller's own: the
 * cache key includes who sent it. Failed calls are not remembered, so they can be retried. Kept in
 * this node's memory, bounded: entries expire on a timer after `ttlMs`, and all of them together
 * hold at most `maxBytes` of responses (the least recently used go first); the asynchronous
 * invocations of cluster mode keep theirs in Redis.
 */
import { LRUCache } from 'lru-cache';

import { IdempotencyConflictError } from '../../../sdk/errors.js';

export interface StoredResponse {
  body: Uint8Array;
  contentType: string;
  version: number;
}

interface Entry {
  request: string;
  value: Promise<StoredResponse>;
}

/** What an entry costs beyond its response's bytes. */
const ENTRY_OVERHEAD = 512;

export class IdempotencyCache {
  readonly #entries: LRUCache<string, Entry>;

  constructor(ttlMs = 10 * 60_000, maxBytes = 64 * 2 ** 20) {
    this.#entries = new LRUCache<string, Entry>({ ttl: ttlMs, ttlAutopurge: true, maxSize: maxBytes });
  }

  /** Entries and bytes held now. */
  get held(): { entries: number; bytes: number } {
    return { entries: this.#entries.size, bytes: this.#entries.calculatedSize };
  }

  /** The first call's response for `key` (which must have been for the same `request` hash), or `run()`'s. */
  run(
    key: string,
    request: string,
    run: () => Promise<StoredResponse>,
  ): { value: Promise<StoredResponse>; replayed: boolean } {
    const found = this.#entries.get(key);
    if (found) {
      if (found.request !== request)
        throw new IdempotencyConflictError(
          'this Idempotency-Key was used for a different request; use a new key for a new request',
        );
      return { value: found.value, replayed: true };
    }
    const value = run();
    const entry: Entry = { request, value };
    this.#entries.set(key, entry, { size: ENTRY_OVERHEAD + key.length });
    // Once answered, the entry weighs its response (and keeps its time to live); a failure is forgotten.
    value.then(
      (response) => {
        if (this.#entries.peek(key) === entry)
          // A new object: lru-cache keeps the old size when the same value is set again.
          this.#entries.set(
            key,
            { ...entry },
            { size: ENTRY_OVERHEAD + key.length + response.body.byteLength, noUpdateTTL: true },
          );
      },
      () => {
        if (this.#entries.peek(key) === entry) this.#entries.delete(key);
      },
    );
    return { value, replayed: false };
  }
}
