/**
 * A hook pool's exchange with its hook threads, in a runner process: memory the runner's thread
 * and the hook threads share (one SharedArrayBuffer a pool, made once; no hook's isolate ever sees
 * it). A request bound for a thread puts its large body there, and the thread puts there the large
 * tensors pre made of it, in the same slot; the batch reads them where they lie.
 *
 * Why: a 602 KB body sent to a thread was copied into an ArrayBuffer of its own to be moved there,
 * and its tensor came back as another. Two such buffers a request, made and dropped in the runner's
 * isolate (and two more in the thread's), are what V8 counts toward its next full collection: at
 * c=64 collections took a quarter of the runner's CPU. A slot is reused as soon as it is let go.
 *
 * A slot is held by whoever may still touch it: the request its tensors feed (until it is
 * answered), the task on a thread (until it has ended, even where its caller was answered first)
 * and the forward that reads them (until it ends).
 */
import type { DType, Tensor, TensorsByName } from '../../sdk/tensor.js';
import { elementSize, numel } from '../../sdk/tensor.js';
import { Extents } from '../tensors/index.js';

/** The exchange's bytes at most (virtual: a page exists once written); past them, copies as before. */
export const EXCHANGE_BYTES = 64 * 2 ** 20;
/** Bodies and tensors smaller than this travel as before: moved, by postMessage. */
export const EXCHANGE_MIN_BYTES = 64 * 1024;

/** Where a request's slot is: [at, at + size). `body`: the body's length there, or -1 (it travels itself). */
export interface Slot {
  at: number;
  size: number;
  body: number;
}

/**
 * A holder's part in some slots: `letGo` lets them go (once: later calls do nothing); while it is
 * `held`, `again` makes another hold on them (undefined after) and gives its `letGo`.
 */
export interface Hold {
  readonly held: boolean;
  letGo(): void;
  again(): (() => void) | undefined;
}

/** Tensors a thread placed in a slot: name → [byte offset in the exchange, elements]. */
export type Placed = Record<string, [number, number]>;

/** The bytes one request's inputs take, where every dim is fixed (0 otherwise). */
export function inputBytes(inputs: readonly { dtype: DType; dims: number[] }[]): number {
  let total = 0;
  for (const t of inputs) {
    if (t.dims.some((d) => d < 0)) return 0;
    total += numel(t.dims) * elementSize(t.dtype);
  }
  return total;
}

/** The runner thread's side: slots given out and let go. */
export class Exchange {
  readonly buffer: SharedArrayBuffer;
  readonly #extents: Extents;
  /** Holders of each slot given out, by its offset. */
  readonly #holders = new Map<number, number>();
  readonly #inputBytes: number;

  /** An exchange of `bytes` for requests whose inputs take `inputBytes` (0: not known ahead). */
  constructor(bytes: number, inputBytes: number) {
    this.buffer = new SharedArrayBuffer(bytes);
    this.#extents = new Extents(0, bytes);
    this.#inputBytes = inputBytes;
  }

  /**
   * A slot for a request bound for a thread, with its body written there if it is large, and room
   * for the tensors pre will make of it (the spec's inputs, where their size is fixed); and the
   * request's hold on it. Undefined where neither is large, or the exchange has no room.
   */
  place(body: Uint8Array): { slot: Slot; hold: Hold } | undefined {
    const large = body.byteLength >= EXCHANGE_MIN_BYTES;
    const size = Math.max(large ? body.byteLength : 0, this.#inputBytes);
    if (size < EXCHANGE_MIN_BYTES) return undefined;
    const at = this.#extents.alloc(size);
    if (at === undefined) return undefined;
    if (large) new Uint8Array(this.buffer, at, body.byteLength).set(body);
    const slot = { at, size, body: large ? body.byteLength : -1 };
    return { slot, hold: this.holdEach([slot]) };
  }

  /** A hold on each of `slots` (a task that reads and writes them, a forward that reads them). */
  holdEach(slots: readonly Slot[]): Hold {
    for (const slot of slots) this.#holders.set(slot.at, (this.#holders.get(slot.at) ?? 0) + 1);
    let held = true;
    return {
      get held() {
        return held;
      },
      letGo: () => {
        if (held) for (const slot of slots) this.#release(slot);
        held = false;
      },
      again: () => (held ? this.holdEach(slots).letGo : undefined),
    };
  }

  /** A holder lets `slot` go; the last one frees it. */
  #release(slot: Slot): void {
    const holders = this.#holders.get(slot.at);
    if (holders === undefined) return;
    if (holders > 1) this.#holders.set(slot.at, holders - 1);
    else {
      this.#holders.delete(slot.at);
      this.#extents.free(slot.at);
    }
  }

  /** Bytes given out now. */
  get used(): number {
    return this.#extents.used;
  }

  /**
   * pre's tensors with those the thread placed in `slot` as views of the exchange, each checked to
   * lie inside the slot, aligned, of its placeholder's type.
   */
  views(tensors: TensorsByName, placed: Placed | undefined, slot: Slot): TensorsByName {
    if (placed === undefined) return tensors;
    const out: TensorsByName = { ...tensors };
    for (const [name, [at, n]] of Object.entries(placed)) {
      const t = tensors[name];
      const View = t?.data.constructor as { new (b: ArrayBufferLike, at: number, n: number): Tensor['data'] };
      const size = t?.data.BYTES_PER_ELEMENT ?? 0;
      if (!t || size === 0 || at % size !== 0 || at < slot.at || at + n * size > slot.at + slot.size)
        throw new Error(`tensor ${name} was placed outside its request's slot`);
      out[name] = { ...t, data: new View(this.buffer, at, n) } as Tensor;
    }
    return out;
  }
}

/** A thread's view of a request's body in the exchange. */
export function bodyIn(exchange: SharedArrayBuffer, slot: Slot): Uint8Array {
  return new Uint8Array(exchange, slot.at, slot.body);
}

/**
 * A thread's side: copies pre's large tensors into the request's slot while they fit (its body is
 * read by then), each left as an empty typed array of its type; what did not fit stays as it is,
 * and so do BYTES tensors (a forward re-reads their lengths: they stay the request's own). Over a
 * body in the slot only where the task was the request's `alone`: a group's bodies are read again,
 * each alone, if its task fails whole.
 */
export function placeTensors(
  exchange: SharedArrayBuffer,
  slot: Slot,
  tensors: TensorsByName,
  alone: boolean,
): { tensors: TensorsByName; placed: Placed | undefined } {
  if (slot.body >= 0 && !alone) return { tensors, placed: undefined };
  let placed: Placed | undefined;
  let at = slot.at;
  const out: TensorsByName = { ...tensors };
  for (const [name, t] of Object.entries(tensors)) {
    const bytes = t.data.byteLength;
    if (t.dtype === 'BYTES' || bytes < EXCHANGE_MIN_BYTES || at + bytes > slot.at + slot.size) continue;
    new Uint8Array(exchange, at, bytes).set(new Uint8Array(t.data.buffer, t.data.byteOffset, bytes));
    const View = t.data.constructor as { new (n: number): Tensor['data'] };
    placed ??= {};
    placed[name] = [at, t.data.length];
    out[name] = { ...t, data: new View(0) } as Tensor;
    at = (at + bytes + 7) & ~7; // 8-aligned for the next (the exchange is far below 2 GiB)
  }
  return { tensors: out, placed };
}
