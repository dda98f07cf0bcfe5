/**
 * What crosses a hook isolate's boundary for many requests at once (the glue's preMany and
 * postMany, sandbox-source.ts), packed so that a crossing copies a few large values rather than
 * many small ones: the requests' bodies end to end in one Uint8Array (and their JSON texts in one
 * string), a batch's outputs as the spans of its buffers, and what the hooks return as one
 * ArrayBuffer with each typed array's place in it. Everything read back is checked here: the
 * isolate's answer is the hook's, and the hook may lie.
 */
import type { Tensor, TensorsByName } from '../../sdk/tensor.js';
import type { PackedJson } from '../engine/index.js';
import { parseJsonPacked } from '../engine/index.js';
import { copyOf, unfilled } from '../tensors/index.js';
import type { RawRequest } from './messages.js';

const JSON_TYPE = /^application\/(.+\+)?json\b|^text\/json\b/i;
const decoder = new TextDecoder();

export const isJson = (contentType: string): boolean => JSON_TYPE.test(contentType);

type ViewConstructor = { new (buffer: ArrayBuffer, at: number, n: number): Tensor['data']; BYTES_PER_ELEMENT: number };

/** The typed arrays a packed value may name (the glue's VIEWS). */
const VIEWS: Record<string, ViewConstructor> = {
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
} as unknown as Record<string, ViewConstructor>;

/** A typed array's own type name, as V8 knows it (a Buffer is a Uint8Array). */
const typedName = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), Symbol.toStringTag)!
  .get as (this: unknown) => string | undefined;

const align = (n: number): number => (n + 7) & ~7;

/**
 * JSON bodies up to this size are parsed by the host (a 3 MB image as JSON fits). Its parse takes
 * memory outside the isolate's cap: simdjson's tape, 8 bytes a packed number, and the few JS values
 * it makes (bounded in json_packed.cc, past which it leaves the body to JSON.parse). A larger body
 * goes to the hook's own JSON.parse, inside the cap, as before.
 */
const HOST_PARSE_UP_TO = 4 * 2 ** 20;

/** A JSON body parsed by the host: its value with the arrays of numbers at `at` in the crossing's bytes. */
export interface ParsedBody {
  value: unknown;
  at: number;
  packs: PackedJson['packs'];
}

/**
 * A binary body this large crosses in a buffer of its own, moved into the isolate as the hook's
 * `request.bytes`: one copy on the way in. Packed with others, the isolate would copy it out of
 * the pack again to give each hook a body of its own (a 602 KB tensor: ~100 µs a copy).
 */
export const OWN_BUFFER_BYTES = 64 * 1024;

/**
 * The most bytes of such bodies one crossing places in the sandbox's inbox: memory the host and
 * the isolate share (a SharedArrayBuffer, made once), from which the glue copies each into a buffer
 * of the isolate's own before any hook runs. The host makes no buffer for them: 602 KB buffers made
 * per request in the runner's own isolate (its copy of the body, moved in) brought V8's full
 * collections, about eight a second at c=1. Bodies past the inbox's room move in as before.
 */
export const INBOX_BYTES = 2 * 2 ** 20;

/**
 * Requests' bodies for preMany: binary ones end to end in a new buffer (which moves into the
 * isolate), each of OWN_BUFFER_BYTES or more on its own instead (`own`, in order; its end `null`):
 * written into `inbox` where it has room (`own` says where: [from, to)), else in a copy of its own
 * (to move in). JSON ones are parsed here where the addon can (parseJsonPacked: their numbers after
 * the binary bodies in the same buffer, `parsed[i]` the rest) or else go as text end to end.
 */
export function packBodies(
  requests: readonly RawRequest[],
  inbox: Uint8Array = new Uint8Array(0),
): {
  bytes: Uint8Array;
  own: (Uint8Array | [number, number])[];
  texts: string;
  ends: (number | null)[];
  types: string[];
  parsed: (ParsedBody | null)[];
} {
  const own: (Uint8Array | [number, number])[] = [];
  const alone = requests.map((r) => !isJson(r.contentType) && r.body.byteLength >= OWN_BUFFER_BYTES);
  const rest = requests.map((r, i) => (alone[i] ? { ...r, body: new Uint8Array(0) } : r));
  let used = 0;
  for (const [i, { body }] of requests.entries()) {
    if (!alone[i]) continue;
    if (used + body.byteLength > inbox.byteLength) own.push(copyOf(body));
    else {
      inbox.set(body, used);
      own.push([used, used + body.byteLength]);
      used += body.byteLength;
    }
  }
  const packed = packRest(rest);
  return { ...packed, own, ends: packed.ends.map((e, i) => (alone[i] ? null : e)) };
}

function packRest(requests: readonly RawRequest[]): {
  bytes: Uint8Array;
  texts: string;
  ends: number[];
  types: string[];
  parsed: (ParsedBody | null)[];
} {
  const json = requests.map((r) => isJson(r.contentType));
  const packed = requests.map((r, i) =>
    json[i] && r.body.byteLength <= HOST_PARSE_UP_TO ? parseJsonPacked(r.body) : undefined,
  );
  const binary = requests.reduce((n, r, i) => n + (json[i] ? 0 : r.body.byteLength), 0);
  let size = packed.some((p) => p !== undefined) ? align(binary) : binary;
  const parsed = packed.map((p) => {
    if (p === undefined) return null;
    const at = size;
    size += p.numbers.byteLength;
    return { value: p.value, at, packs: p.packs };
  });
  // Every byte is written below: the bodies, the parsed numbers, and the alignment gap between.
  const bytes = unfilled(size);
  bytes.fill(0, binary, parsed.find((p) => p !== null)?.at ?? binary);
  const texts: string[] = [];
  let b = 0;
  let t = 0;
  const ends = requests.map((r, i) => {
    const p = packed[i];
    if (p !== undefined)
      bytes.set(new Uint8Array(p.numbers.buffer, p.numbers.byteOffset, p.numbers.byteLength), parsed[i]!.at);
    else if (json[i]) {
      const text = decoder.decode(r.body);
      texts.push(text);
      t += text.length;
    } else {
      bytes.set(r.body, b);
      b += r.body.byteLength;
      return b;
    }
    return -1 - t;
  });
  return { bytes, texts: texts.join(''), ends, types: requests.map((r) => r.contentType), parsed };
}

export interface TensorMeta {
  dtype: string;
  shape: number[];
  view: string;
  at: number;
  n: number;
}

/**
 * A batch's outputs for postMany, in a new buffer (which moves into the isolate): each buffer they
 * are views of, copied once as the span its views cover (each request's rows of a batch's output
 * are one buffer's parts), and where each view is.
 */
export function packOutputs(outputs: readonly TensorsByName[]): {
  bytes: Uint8Array;
  metas: Record<string, TensorMeta>[];
} {
  const spans = new Map<ArrayBufferLike, { from: number; to: number; at: number }>();
  for (const tensors of outputs)
    for (const t of Object.values(tensors)) {
      const s = spans.get(t.data.buffer);
      const from = t.data.byteOffset;
      const to = from + t.data.byteLength;
      if (s) {
        s.from = Math.min(s.from, from);
        s.to = Math.max(s.to, to);
      } else spans.set(t.data.buffer, { from, to, at: 0 });
    }
  let size = 0;
  for (const s of spans.values()) {
    s.at = (size + 7) & ~7;
    size = s.at + (s.to - s.from);
  }
  // Every byte is written: each span, and the alignment gap before it.
  const bytes = unfilled(size);
  let end = 0;
  for (const [buffer, s] of spans) {
    bytes.fill(0, end, s.at);
    bytes.set(new Uint8Array(buffer, s.from, s.to - s.from), s.at);
    end = s.at + (s.to - s.from);
  }
  const metas = outputs.map((tensors) => {
    const meta: Record<string, TensorMeta> = {};
    for (const [name, t] of Object.entries(tensors)) {
      const s = spans.get(t.data.buffer)!;
      const view = typedName.call(t.data) as string;
      meta[name] = { dtype: t.dtype, shape: t.shape, view, at: s.at + t.data.byteOffset - s.from, n: t.data.length };
    }
    return meta;
  });
  return { bytes, metas };
}

/** A typed array the glue placed in `arena`, checked: a known type, aligned, inside the arena. */
export function viewIn(arena: unknown, view: unknown, at: unknown, n: unknown): Tensor['data'] {
  const View = typeof view === 'string' && Object.hasOwn(VIEWS, view) ? VIEWS[view]! : undefined;
  if (
    !(arena instanceof ArrayBuffer) ||
    View === undefined ||
    !Number.isSafeInteger(at) ||
    !Number.isSafeInteger(n) ||
    (at as number) < 0 ||
    (n as number) < 0 ||
    (at as number) % View.BYTES_PER_ELEMENT !== 0 ||
    (at as number) + (n as number) * View.BYTES_PER_ELEMENT > arena.byteLength
  )
    throw new Error('the hook returned a typed array the sandbox could not read back');
  return new View(arena, at as number, n as number);
}

/**
 * What a crossing's answer holds its typed arrays in, taken out of the isolate: the one they were
 * packed into, and the large ones that left as buffers of their own (the glue's `owns`).
 */
export interface Arenas {
  packed: unknown;
  owns: readonly unknown[];
}

/** A typed array of the answer at `at` (a place in the packed arena; -1 - i for the i-th own buffer), checked as viewIn does. */
export function viewAt(arenas: Arenas, view: unknown, at: unknown, n: unknown): Tensor['data'] {
  if (typeof at === 'number' && at < 0) return viewIn(arenas.owns[-1 - at], view, 0, n);
  return viewIn(arenas.packed, view, at, n);
}

/** pre's tensors, read back from the arenas; data that was no typed array is left as the hook gave it. */
export function tensorsIn(tensors: Record<string, Record<string, unknown>>, arenas: Arenas): TensorsByName {
  const out: TensorsByName = {};
  for (const [name, t] of Object.entries(tensors)) {
    out[name] = (
      t.view === undefined
        ? { dtype: t.dtype, shape: t.shape, data: t.data }
        : { dtype: t.dtype, shape: t.shape, data: viewAt(arenas, t.view, t.at, t.n) }
    ) as Tensor;
  }
  return out;
}

/**
 * Groups of consecutive items, each at most `maxItems` and `maxBytes` (an item over it alone):
 * what one crossing takes, so that a batch of large bodies does not all sit in the isolate at once.
 */
export function crossings<T>(
  items: readonly T[],
  bytesOf: (item: T) => number,
  maxBytes: number,
  maxItems = 64,
): T[][] {
  const groups: T[][] = [];
  let group: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const n = bytesOf(item);
    if (group.length > 0 && (bytes + n > maxBytes || group.length >= maxItems)) {
      groups.push(group);
      group = [];
      bytes = 0;
    }
    group.push(item);
    bytes += n;
  }
  if (group.length > 0) groups.push(group);
  return groups;
}
