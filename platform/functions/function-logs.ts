/**
 * Each function version's own log: what its hook printed (`console.*` in the sandbox), what its
 * runner process wrote, its lifecycle (loading, warm, crashes, restarts, cold starts) and the
 * detail of its errors (a model's traceback, which its callers are not shown). Kept in memory in a
 * ring per version, all of them together capped at MAX_BYTES of messages (the least recently
 * written versions' rings go first), and followed
 * live by `GET /api/v1/functions/{name}/logs?follow=1` (server-sent events).
 */
import { EventEmitter } from 'node:events';

import { LRUCache } from 'lru-cache';

import type { FunctionLogEntry } from '../../sdk/api/index.js';
import { functionOfKey, versionKey } from '../../sdk/spec/index.js';

/** Entries are as the API serves them (sdk/api's LogEntrySchema). */
export type LogSource = FunctionLogEntry['source'];

/** Entries per version, and the longest message kept. */
const RING = 1000;
const MAX_MESSAGE = 8192;
/** Versions whose rings are kept, and the bytes of messages all rings hold together. */
const MAX_RINGS = 2000;
const MAX_BYTES = 64 * 2 ** 20;

const LEVEL_ORDER: FunctionLogEntry['level'][] = ['debug', 'info', 'warn', 'error'];
const LEVELS = new Set<string>(LEVEL_ORDER);

export class FunctionLogs extends EventEmitter {
  /** Message bytes held by all rings. */
  #bytes = 0;
  readonly #rings = new LRUCache<string, FunctionLogEntry[]>({
    max: MAX_RINGS,
    dispose: (ring) => {
      for (const e of ring) this.#bytes -= e.msg.length;
    },
  });
  readonly #ring: number;

  constructor(ring = RING) {
    super();
    this.#ring = ring;
    this.setMaxListeners(0);
  }

  add(
    entry: Pick<FunctionLogEntry, 'function' | 'version' | 'source' | 'level' | 'msg' | 'requestId'> & { at?: number },
  ): void {
    const e: FunctionLogEntry = {
      ...entry,
      at: entry.at ?? Date.now(),
      msg: entry.msg.length > MAX_MESSAGE ? `${entry.msg.slice(0, MAX_MESSAGE)}…` : entry.msg,
    };
    const key = versionKey(e.function, e.version ?? '');
    let ring = this.#rings.get(key);
    if (!ring) {
      ring = [];
      this.#rings.set(key, ring);
    }
    ring.push(e);
    this.#bytes += e.msg.length;
    if (ring.length > this.#ring)
      for (const old of ring.splice(0, ring.length - this.#ring)) this.#bytes -= old.msg.length;
    // Over the cap: the least recently written rings go (never the one just written while others remain).
    while (this.#bytes > MAX_BYTES && this.#rings.size > 1) this.#rings.pop();
    this.emit('entry', e);
  }

  /**
   * A line a runner wrote, as its pool's key (`name@version`) labels it: a hook's console line is
   * JSON (`{"hook", "level", "msg"}`, runtime/hooks/worker.ts); anything else is the runner's own.
   */
  addRunnerLine(label: string, line: string): void {
    const at = label.lastIndexOf('@');
    const name = at > 0 ? label.slice(0, at) : label;
    const version = at > 0 ? Number(label.slice(at + 1)) : undefined;
    let hook: { hook?: unknown; level?: unknown; msg?: unknown } | undefined;
    if (line.startsWith('{"hook"')) {
      try {
        hook = JSON.parse(line) as typeof hook;
      } catch {
        hook = undefined;
      }
    }
    const level =
      typeof hook?.level === 'string' && LEVELS.has(hook.level) ? (hook.level as FunctionLogEntry['level']) : 'info';
    this.add({
      function: name,
      ...(version !== undefined && Number.isInteger(version) ? { version } : {}),
      source: hook ? 'hook' : 'runner',
      level: hook ? level : 'info',
      msg: hook && typeof hook.msg === 'string' ? hook.msg : line,
    });
  }

  /** A function's entries, oldest first: of one version or all, at `level` or above, the last `limit`. */
  recent(
    name: string,
    options: { version?: number; limit?: number; since?: number; level?: FunctionLogEntry['level'] } = {},
  ): FunctionLogEntry[] {
    const all: FunctionLogEntry[] = [];
    const least = options.level === undefined ? 0 : LEVEL_ORDER.indexOf(options.level);
    for (const [key, ring] of this.#rings.entries()) {
      if (functionOfKey(key) !== name) continue;
      if (options.version !== undefined && key !== versionKey(name, options.version)) continue;
      for (const e of ring)
        if ((options.since === undefined || e.at >= options.since) && LEVEL_ORDER.indexOf(e.level) >= least)
          all.push(e);
    }
    all.sort((a, b) => a.at - b.at);
    return all.slice(-(options.limit ?? RING));
  }

  /** Follows a function's new entries (at `level` or above) until the returned stop is called. */
  follow(
    name: string,
    version: number | undefined,
    onEntry: (e: FunctionLogEntry) => void,
    level?: FunctionLogEntry['level'],
  ): () => void {
    const least = level === undefined ? 0 : LEVEL_ORDER.indexOf(level);
    const listener = (e: FunctionLogEntry) => {
      if (
        e.function === name &&
        (version === undefined || e.version === version) &&
        LEVEL_ORDER.indexOf(e.level) >= least
      )
        onEntry(e);
    };
    this.on('entry', listener);
    return () => this.off('entry', listener);
  }

  /** Message bytes held now (a test of the cap). */
  get bytes(): number {
    return this.#bytes;
  }

  /** A deleted function's entries go. */
  forget(name: string): void {
    for (const key of [...this.#rings.keys()]) if (functionOfKey(key) === name) this.#rings.delete(key);
  }
}
