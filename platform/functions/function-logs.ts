/**
 * Each function version's own log: what its hook printed (`console.*` in the sandbox), what its
 * runner process wrote, its lifecycle (loading, warm, crashes, restarts, cold starts) and the
 * detail of its errors (a model's traceback, which its callers are not shown). Kept in memory in a
 * ring per version, bounded in entries and in bytes (each entry, each ring), all of them together
 * capped at MAX_BYTES (the least recently written versions' rings go first), and followed live by
 * `GET /api/v1/functions/{name}/logs?follow=1` (server-sent events).
 *
 * What a tenant makes — its failed calls' detail (hook and model errors), its hook's lines in a node
 * without runners — spends a budget per version of the runner output's size (runtime's
 * limitedLines: lines and bytes a second): past it entries are dropped and counted, and a `dropped
 * N` entry says so. Whoever copies an entry to the node's log copies only what was kept (add's
 * answer). A runner's lines spent their runner's budget on the way here (runner-output.ts).
 */
import { EventEmitter } from 'node:events';

import { LRUCache } from 'lru-cache';

import { limitedLines } from '../../runtime/index.js';
import type { FunctionLogEntry } from '../../sdk/api/index.js';
import { functionOfKey, versionKey } from '../../sdk/spec/index.js';
import { byteLength, clipBytes } from '../../sdk/text.js';

/** Entries are as the API serves them (sdk/api's LogEntrySchema). */
export type LogSource = FunctionLogEntry['source'];

/** Entries per version, the bytes of their messages, and the longest message kept (bytes). */
const RING = 1000;
const RING_BYTES = 1 * 2 ** 20;
const MAX_MESSAGE = 8192;
/** Versions whose rings are kept, and the bytes of messages all rings hold together. */
const MAX_RINGS = 2000;
const MAX_BYTES = 64 * 2 ** 20;
/** The sources a tenant writes, which spend its version's budget. */
const TENANT_SOURCES = new Set<LogSource>(['hook', 'runner', 'error']);

type Entry = Pick<FunctionLogEntry, 'function' | 'version' | 'source' | 'level' | 'msg' | 'requestId'> & {
  at?: number;
};

/** A version's entries, their message bytes, and the budget its tenant's entries spend. */
interface Ring {
  entries: FunctionLogEntry[];
  bytes: number;
  /** Passes an entry's message on (true) or drops and counts it (false). */
  budget: (msg: string) => boolean;
}

const LEVEL_ORDER: FunctionLogEntry['level'][] = ['debug', 'info', 'warn', 'error'];
const LEVELS = new Set<string>(LEVEL_ORDER);

export class FunctionLogs extends EventEmitter {
  /** Message bytes held by all rings. */
  #bytes = 0;
  readonly #rings = new LRUCache<string, Ring>({
    max: MAX_RINGS,
    dispose: (ring) => {
      this.#bytes -= ring.bytes;
    },
  });
  readonly #ring: number;
  readonly #ringBytes: number;
  /** The entry being let through its budget (limitedLines hands back only its message). */
  #passing: FunctionLogEntry | undefined;

  constructor(ring = RING, ringBytes = RING_BYTES) {
    super();
    this.#ring = ring;
    this.#ringBytes = ringBytes;
    this.setMaxListeners(0);
  }

  /**
   * Adds an entry, its message cut to MAX_MESSAGE bytes; one a tenant made (TENANT_SOURCES) only
   * within its version's budget, unless `spent` (a runner's line, which spent its runner's budget of
   * the same size on its way here). Whether it was kept: false, dropped (and counted).
   */
  add(entry: Entry, spent = false): boolean {
    const e: FunctionLogEntry = { ...entry, at: entry.at ?? Date.now(), msg: clipBytes(entry.msg, MAX_MESSAGE) };
    const key = versionKey(e.function, e.version ?? '');
    const ring = this.#ringOf(key, e);
    if (spent || !TENANT_SOURCES.has(e.source)) {
      this.#push(key, ring, e);
      return true;
    }
    this.#passing = e;
    try {
      return ring.budget(e.msg);
    } finally {
      this.#passing = undefined;
    }
  }

  #ringOf(key: string, e: FunctionLogEntry): Ring {
    const ring = this.#rings.get(key);
    if (ring) return ring;
    const { function: name, version } = e;
    const created: Ring = {
      entries: [],
      bytes: 0,
      budget: limitedLines((msg, notice) => {
        // A notice of what was dropped is the node's, said in the version's log (before the entry
        // it comes with, or on its own once the flood stopped).
        if (notice)
          this.#push(key, created, {
            function: name,
            ...(version === undefined ? {} : { version }),
            source: 'lifecycle',
            level: 'warn',
            msg: msg.replace('line(s) of output', 'log entries'),
            at: Date.now(),
          });
        else if (this.#passing) this.#push(key, created, this.#passing);
      }),
    };
    this.#rings.set(key, created);
    return created;
  }

  #push(key: string, ring: Ring, e: FunctionLogEntry): void {
    // A ring evicted meanwhile (the cap) is taken back, bytes and all: its entry is written now.
    if (this.#rings.get(key) !== ring) {
      this.#rings.set(key, ring);
      this.#bytes += ring.bytes;
    }
    const bytes = byteLength(e.msg);
    ring.entries.push(e);
    ring.bytes += bytes;
    this.#bytes += bytes;
    while (ring.entries.length > this.#ring || (ring.bytes > this.#ringBytes && ring.entries.length > 1)) {
      const old = ring.entries.shift()!;
      const freed = byteLength(old.msg);
      ring.bytes -= freed;
      this.#bytes -= freed;
    }
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
    this.add(
      {
        function: name,
        ...(version !== undefined && Number.isInteger(version) ? { version } : {}),
        source: hook ? 'hook' : 'runner',
        level: hook ? level : 'info',
        msg: hook && typeof hook.msg === 'string' ? hook.msg : line,
      },
      // Its runner's output budget (runtime's readOutput) let it through already.
      true,
    );
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
      for (const e of ring.entries)
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
