/**
 * The sequence batcher (Triton's sequence_batching) for stateful models: every request names its
 * sequence; a sequence is placed on one instance (a lane) when it starts and stays there, one
 * request of it per batch, in arrival order, until its END request runs or it sits idle past
 * maxSequenceIdleUs.
 *
 * - direct: a sequence holds one batch slot of its lane for its whole life; a batch carries each
 *   slot's next request at that slot's row, and rows of slots with nothing queued are fillers (the
 *   model sees READY = false there), so a model may keep per-slot state by row.
 * - oldest: a lane holds up to maxCandidateSequences sequences; a batch takes the oldest queued
 *   request of each, oldest first, up to the batch size, with no fillers (rows move between
 *   batches: such models key their state by CORRID).
 *
 * Sequences that find every slot taken wait, in order, for one to free. The router only decides;
 * the pool runs each batch on the lane's instance and calls release(lane) when it is done.
 */

import type { HearthError } from '../../sdk/errors.js';
import { InvalidInputError, QueueFullError, UnavailableError } from '../../sdk/errors.js';
import type { Clock } from './clock.js';
import { systemClock } from './clock.js';

export interface SequenceOptions {
  strategy: 'direct' | 'oldest';
  /** Rows per batch: the model's max batch size (1 when it has no batch dimension). */
  batchSize: number;
  /** oldest: sequences one lane holds at once. */
  maxCandidateSequences?: number;
  maxSequenceIdleUs: number;
  /** Names the model in errors. */
  model: string;
}

/** A request's place in its sequence, as the client sent it. */
export interface SequenceFlags {
  /** A non-zero integer (uint64) or a non-empty string. */
  id: bigint | string;
  start: boolean;
  end: boolean;
  /**
   * Who sent it: an opaque id of the caller's API key ('' or absent: the one caller of a node with
   * no keys). Sequences are the caller's own: another caller's id names a different sequence.
   */
  caller?: string;
}

export type SequenceRow<T> =
  | { filler: false; payload: T; id: bigint | string; caller: string; start: boolean; end: boolean }
  | { filler: true };

interface Sequence<T> {
  key: string;
  id: bigint | string;
  caller: string;
  lane: number;
  slot: number;
  queue: { payload: T; flags: SequenceFlags; at: number; reject: (e: HearthError) => void }[];
  lastSeen: number;
  /** Its END request was sent: the sequence goes once that request has run. */
  ending: boolean;
}

interface Lane<T> {
  slots: (Sequence<T> | undefined)[];
  busy: boolean;
}

/** Sequences that may wait for a slot at once; past it a START is refused (QueueFullError, 429). */
const MAX_WAITING = 4096;

export type SequenceDispatch<T> = (lane: number, rows: SequenceRow<T>[]) => void;

/** A sequence's key: its caller and its id, a number and a string of the same digits apart. */
export function sequenceKey(caller: string, id: bigint | string): string {
  return `${caller}\0${typeof id === 'string' ? `s:${id}` : `n:${id}`}`;
}

/**
 * Sequences one caller may hold open (placed or waiting) at once: half the model's slots (at least
 * one), so that one caller's abandoned STARTs — held until max_sequence_idle_microseconds — leave
 * the other half to everyone else. A node with no API keys has one caller, which is not limited.
 */
export function callerSequenceLimit(slots: number): number {
  return Math.max(1, Math.floor(slots / 2));
}

export class SequenceRouter<T> {
  readonly #o: SequenceOptions;
  readonly #dispatch: SequenceDispatch<T>;
  readonly #clock: Clock;
  readonly #lanes: Lane<T>[] = [];
  readonly #sequences = new Map<string, Sequence<T>>();
  /** Sequences started while every slot was taken, in order. */
  readonly #waiting: Sequence<T>[] = [];
  /** Open sequences by caller (callers with none are not kept). */
  readonly #open = new Map<string, number>();
  #sweeper: NodeJS.Timeout | undefined;

  /** Told each sequence's key as it goes (its END ran, or it sat idle): what was kept for it can go. */
  readonly #onFree: (key: string) => void;

  constructor(
    options: SequenceOptions,
    dispatch: SequenceDispatch<T>,
    clock: Clock = systemClock,
    onFree: (key: string) => void = () => undefined,
  ) {
    this.#o = options;
    this.#dispatch = dispatch;
    this.#clock = clock;
    this.#onFree = onFree;
  }

  get #slotsPerLane(): number {
    return this.#o.strategy === 'direct'
      ? Math.max(1, this.#o.batchSize)
      : Math.max(1, this.#o.maxCandidateSequences ?? this.#o.batchSize);
  }

  get lanes(): number {
    return this.#lanes.length;
  }

  /** Requests waiting to run. */
  get queueDepth(): number {
    let n = 0;
    for (const s of this.#sequences.values()) n += s.queue.length;
    return n;
  }

  /** Whether the sequence of `key` is in progress (started, not ended nor released). */
  has(key: string): boolean {
    return this.#sequences.has(key);
  }

  /** Sequences in progress (placed or waiting for a slot). */
  get activeSequences(): number {
    return this.#sequences.size;
  }

  addLane(): void {
    this.#lanes.push({ slots: new Array(this.#slotsPerLane).fill(undefined), busy: false });
    this.#place();
    if (!this.#sweeper) {
      const every = Math.max(50, Math.min(1000, this.#o.maxSequenceIdleUs / 2000));
      this.#sweeper = setInterval(() => this.#sweep(), every);
      this.#sweeper.unref();
    }
  }

  /** Batch slots over all lanes: sequences that can be placed at once. */
  get slots(): number {
    return this.#lanes.length * this.#slotsPerLane;
  }

  enqueue(payload: T, flags: SequenceFlags, reject: (e: HearthError) => void): void {
    const caller = flags.caller ?? '';
    const key = sequenceKey(caller, flags.id);
    let sequence = this.#sequences.get(key);
    if (flags.start) {
      if (sequence)
        throw new InvalidInputError(
          `inference request for sequence ${String(flags.id)} to model '${this.#o.model}' has the START flag but that sequence is already in progress; end it first (sequence_end)`,
        );
      this.#admit(caller);
      const at = this.#clock.now();
      sequence = { key, id: flags.id, caller, lane: -1, slot: -1, queue: [], lastSeen: at, ending: false };
      this.#sequences.set(key, sequence);
      if (caller !== '') this.#open.set(caller, (this.#open.get(caller) ?? 0) + 1);
      this.#waiting.push(sequence);
      this.#place();
    } else if (!sequence) {
      throw new InvalidInputError(
        `inference request for sequence ${String(flags.id)} to model '${this.#o.model}' must specify the START flag on the first request of the sequence`,
      );
    } else if (sequence.ending) {
      throw new InvalidInputError(
        `inference request for sequence ${String(flags.id)} to model '${this.#o.model}' came after its END request`,
      );
    }
    if (flags.end) sequence.ending = true;
    sequence.lastSeen = this.#clock.now();
    sequence.queue.push({ payload, flags, at: sequence.lastSeen, reject });
    if (sequence.lane >= 0) this.#schedule(sequence.lane);
  }

  /** A new sequence of `caller` may open: under the waiting bound and the caller's own limit; else 429. */
  #admit(caller: string): void {
    if (this.#waiting.length >= MAX_WAITING)
      throw new QueueFullError(
        `model '${this.#o.model}' has ${MAX_WAITING} sequences waiting for a batch slot; try again later`,
      );
    const limit = callerSequenceLimit(this.slots);
    if (caller !== '' && (this.#open.get(caller) ?? 0) >= limit)
      throw new QueueFullError(
        `this API key has ${limit} sequences open on model '${this.#o.model}', the most one caller may hold (half of its ${this.slots} sequence slots); end one (sequence_end) or let it go idle (max_sequence_idle_microseconds) before starting another`,
      );
  }

  /** The lane's batch has run: its instance takes the next one. */
  release(lane: number): void {
    const l = this.#lanes[lane];
    if (!l) return;
    l.busy = false;
    this.#schedule(lane);
  }

  rejectAll(error: HearthError): void {
    for (const s of this.#sequences.values()) {
      for (const q of s.queue.splice(0)) q.reject(error);
      this.#onFree(s.key);
    }
    this.#sequences.clear();
    this.#open.clear();
    this.#waiting.length = 0;
    for (const l of this.#lanes) l.slots.fill(undefined);
    clearInterval(this.#sweeper);
    this.#sweeper = undefined;
  }

  /** Places waiting sequences into free slots, the lane with the fewest sequences first. */
  #place(): void {
    while (this.#waiting.length > 0) {
      let best = -1;
      let bestUsed = Infinity;
      this.#lanes.forEach((l, i) => {
        const used = l.slots.filter(Boolean).length;
        if (used < l.slots.length && used < bestUsed) {
          best = i;
          bestUsed = used;
        }
      });
      if (best < 0) return;
      const sequence = this.#waiting.shift()!;
      const lane = this.#lanes[best]!;
      sequence.lane = best;
      sequence.slot = lane.slots.indexOf(undefined);
      lane.slots[sequence.slot] = sequence;
      this.#schedule(best);
    }
  }

  #free(sequence: Sequence<T>): void {
    this.#sequences.delete(sequence.key);
    const open = (this.#open.get(sequence.caller) ?? 0) - 1;
    if (open > 0) this.#open.set(sequence.caller, open);
    else this.#open.delete(sequence.caller);
    this.#onFree(sequence.key);
    const waiting = this.#waiting.indexOf(sequence);
    if (waiting >= 0) this.#waiting.splice(waiting, 1);
    const lane = this.#lanes[sequence.lane];
    if (lane && lane.slots[sequence.slot] === sequence) lane.slots[sequence.slot] = undefined;
    this.#place();
  }

  #schedule(laneIndex: number): void {
    const lane = this.#lanes[laneIndex];
    if (!lane || lane.busy) return;
    // Sequences whose END request is in this batch give up their slot only once the batch is
    // dispatched (the lane busy): freeing places a waiting sequence, which schedules its lane.
    const ended: Sequence<T>[] = [];
    const take = (s: Sequence<T>): SequenceRow<T> => {
      const q = s.queue.shift()!;
      if (q.flags.end) ended.push(s);
      return {
        filler: false,
        payload: q.payload,
        id: q.flags.id,
        caller: s.caller,
        start: q.flags.start,
        end: q.flags.end,
      };
    };
    let rows: SequenceRow<T>[];
    if (this.#o.strategy === 'direct') {
      const ready = lane.slots.map((s) => (s && s.queue.length > 0 ? s : undefined));
      const last = ready.reduce((at, s, i) => (s ? i : at), -1);
      if (last < 0) return;
      rows = ready.slice(0, last + 1).map((s) => (s ? take(s) : { filler: true }));
    } else {
      const ready = lane.slots
        .filter((s): s is Sequence<T> => !!s && s.queue.length > 0)
        .sort((a, b) => a.queue[0]!.at - b.queue[0]!.at);
      if (ready.length === 0) return;
      rows = ready.slice(0, Math.max(1, this.#o.batchSize)).map(take);
    }
    lane.busy = true;
    this.#dispatch(laneIndex, rows);
    for (const s of ended) this.#free(s);
  }

  /** Sequences idle past maxSequenceIdleUs (nothing queued) are released, as Triton releases them. */
  #sweep(): void {
    const now = this.#clock.now();
    for (const s of [...this.#sequences.values()]) {
      if (s.queue.length === 0 && now - s.lastSeen > this.#o.maxSequenceIdleUs) this.#free(s);
    }
  }

  /** Stops taking work (the pool is stopping). */
  close(): void {
    this.rejectAll(new UnavailableError(`model '${this.#o.model}' stopped`));
  }
}
