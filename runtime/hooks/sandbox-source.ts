/**
 * The code a hook's isolate runs besides the hook (sandbox.ts loads it): the prelude that builds its
 * globals on the host's callbacks, the glue module that calls the hook and hands failures back as
 * values, and the stand-in for `node:module` that a bundle with a Node banner imports.
 */
import { OWN_BUFFER_BYTES } from './crossing.js';

/**
 * Globals of the sandbox, built on the host callbacks `$log`, `$random`, `$url`, `$image`,
 * `$encode`, `$decode`, inside a function so hook code can reach the callbacks only through them.
 * WebAssembly is taken away unless the spec allows it (limits.hookWebAssembly): its memory is
 * reserved by V8 apart from the isolate's heap and would escape limits.hookMemoryMb.
 */
export const PRELUDE = String.raw`
(() => {
const { $log, $random, $url, $image, $encode, $decode, $webAssembly } = globalThis;
for (const name of ['$log', '$random', '$url', '$image', '$encode', '$decode', '$webAssembly']) delete globalThis[name];
if (!$webAssembly) delete globalThis.WebAssembly;
const show = (v) => { if (typeof v === 'string') return v; if (v instanceof Error) return v.stack || v.message; try { return JSON.stringify(v); } catch { return String(v); } };
const logAt = (level) => (...args) => $log.applySync(undefined, [level, args.map(show).join(' ')]);
globalThis.console = { log: logAt('info'), info: logAt('info'), debug: logAt('debug'), warn: logAt('warn'), error: logAt('error') };
// UTF-8 by the host's native codec (a per-character loop in here would cost more than the copy).
class TextEncoder {
  get encoding() { return 'utf-8'; }
  encode(s = '') { return $encode.applySync(undefined, [String(s)], { result: { copy: true } }); }
}
class TextDecoder {
  constructor(label = 'utf-8') { if (!/^utf-?8$/i.test(label)) throw new RangeError('only utf-8 is supported'); }
  get encoding() { return 'utf-8'; }
  decode(input) {
    if (input === undefined) return '';
    const b = input instanceof Uint8Array ? input : ArrayBuffer.isView(input) ? new Uint8Array(input.buffer, input.byteOffset, input.byteLength) : new Uint8Array(input);
    return $decode.applySync(undefined, [b], { arguments: { copy: true } });
  }
}
class URLSearchParams {
  #p;
  constructor(init = '') { this.#p = String(init).replace(/^\?/, '').split('&').filter(Boolean).map((kv) => { const [k, v = ''] = kv.split('='); const d = (x) => decodeURIComponent(x.replace(/\+/g, ' ')); return [d(k), d(v)]; }); }
  get(name) { const e = this.#p.find(([k]) => k === name); return e ? e[1] : null; }
  getAll(name) { return this.#p.filter(([k]) => k === name).map(([, v]) => v); }
  has(name) { return this.#p.some(([k]) => k === name); }
  entries() { return this.#p[Symbol.iterator](); }
  [Symbol.iterator]() { return this.#p[Symbol.iterator](); }
  toString() { return this.#p.map(([k, v]) => encodeURIComponent(k) + '=' + encodeURIComponent(v)).join('&'); }
}
class URL {
  constructor(input, base) {
    Object.assign(this, $url.applySync(undefined, [String(input), base === undefined ? undefined : String(base)], { result: { copy: true } }));
    this.searchParams = new URLSearchParams(this.search);
  }
  toString() { return this.href; }
  toJSON() { return this.href; }
}
const crypto = { getRandomValues(a) { const b = $random.applySync(undefined, [a.byteLength], { result: { copy: true } }); new Uint8Array(a.buffer, a.byteOffset, a.byteLength).set(b); return a; } };
// The host answers { ok, value } or { ok: false, message, input }: its errors cross as values.
const $imageCall = (name) => (...args) => {
  // The host answers an ExternalCopy: its buffers move in (transferIn), not copied again.
  const r = $image.applySync(undefined, [name, ...args], { arguments: { copy: true } }).copy({ transferIn: true, release: true });
  if (r.ok) return r.value;
  const e = new Error(r.message);
  if (r.input) e.code = 'INVALID_INPUT';
  throw e;
};
const __hearth = { decodeImage: $imageCall('decodeImage'), readImage: $imageCall('readImage'), transform: $imageCall('transform'), encodeImage: $imageCall('encodeImage') };
Object.assign(globalThis, { TextEncoder, TextDecoder, URL, URLSearchParams, crypto, __hearth });
})();
undefined;
`;

/**
 * The module that calls the hook (imported as 'hook'), and hands failures back as values. It runs
 * pre or post for many requests in one call (preMany, postMany: one crossing of the isolate's
 * boundary for a group or a batch, not one per request), and packs what they return into one
 * ArrayBuffer (crossing.ts reads it back): a typed array copied out of an isolate costs as much
 * as the call itself. A response over `maxResponseBytes` fails there, before it is copied out.
 */
export const glue = (maxResponseBytes: number): string =>
  `import hook from 'hook';\nconst MAX_RESPONSE = ${maxResponseBytes};\n${GLUE}`;

/**
 * The largest arena that leaves the isolate inside the call's own answer (structured clone, a few
 * copies) rather than by the host's second call, take (one copy): a 4 KiB vector's took ~9 µs a
 * call that way, the copies of 16 KiB about 2.
 */
export const SMALL_ARENA_BYTES = 16 * 1024;

/** The glue past its first lines (which name the hook's module and its response limit). */
const GLUE = String.raw`
const tooLarge = (n) => new Error('post returned ' + n + ' bytes, over its limit of ' + MAX_RESPONSE + ' (limits.maxResponseMb)');
const VIEWS = { Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array };
// A typed array's own type name (undefined for anything else), as V8 knows it.
const typedName = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), Symbol.toStringTag).get;
const viewOf = (d) => (d !== null && typeof d === 'object' ? typedName.call(d) : undefined);
const now = Date.now;
let context;
const fail = (e, input = false) => ({ ok: false, message: String(e instanceof Error ? e.message : e).slice(0, 8192), input: input || e?.code === 'INVALID_INPUT', reason: typeof e?.reason === 'string' ? e.reason : undefined, stack: e instanceof Error && typeof e.stack === 'string' ? e.stack.slice(0, 8192) : undefined });
// A JSON request whose value \`read()\` makes when the hook first reads request.json.
function jsonRequest(read, contentType) {
  let parsed;
  return { kind: 'json', contentType, get json() { return (parsed ??= { value: read() }).value; } };
}
// JSON.parse of a body's text, a body that is not JSON being the caller's error.
const parseText = (text) => () => {
  try { return JSON.parse(text()); } catch (e) { const err = new Error('the body is not valid JSON: ' + e.message); err.code = 'INVALID_INPUT'; throw err; }
};
export async function setup(base) {
  try {
    base = { ...base, secrets: Object.freeze({ ...base.secrets }) };
    if (!hook || typeof hook.pre !== 'function' || typeof hook.post !== 'function') throw new Error('the hook module must \x60export default defineHook({ pre, post })\x60');
    context = { ...base, state: hook.setup ? await hook.setup(base) : undefined };
    return { ok: true };
  } catch (e) { return fail(e); }
}
const parked = new Map();
let nextPark = 0;
export function wait(id) {
  const p = parked.get(id);
  parked.delete(id);
  return p;
}
const isPromise = (v) => v !== null && typeof v === 'object' && typeof v.then === 'function';
// Calls each request's hook until \`budget\` ms have passed (the host calls again for the rest), then
// packs: at once if every hook answered synchronously (no thread hop), else once all settle, parked
// for the host to wait on with wait(id).
function many(n, budget, call, then, pack) {
  const t0 = now();
  const out = [];
  for (let i = 0; i < n && (i === 0 || now() - t0 < budget); i++) {
    try {
      const v = call(i);
      out.push(isPromise(v) ? Promise.resolve(v).then(guarded(then), (e) => fail(e)) : guarded(then)(v));
    } catch (e) { out.push(fail(e)); }
  }
  if (!out.some(isPromise)) return pack(out, true);
  const id = ++nextPark;
  parked.set(id, Promise.all(out).then((settled) => pack(settled, false)));
  return { parked: id };
}
const guarded = (fn) => (value) => { try { return fn(value); } catch (e) { return fail(e); } };
const align = (n) => (n + 7) & ~7;
// One ArrayBuffer for every typed array the items hold: \`place(item, claim)\` claims room for each.
// Answering at once (\`sync\`), a large one that is the whole of an ArrayBuffer leaves as that
// buffer instead (\`owns\`, its place -1 - its index there): the host takes it right after this
// call, before any other call into the isolate (sandbox.ts #call), with no copy here first. So it is
// what the hook returned, or what the microtasks the hooks queued in this same call left in it (a
// hook that writes into a buffer after returning it changes only its own function's answers). A parked
// answer, taken later, is copied as it settles: other calls' hooks may run before it is taken.
function packed(items, place, sync) {
  let size = 0;
  const copies = [];
  const owns = [];
  const placed = new Map();
  const claim = (d) => {
    if (sync && d.byteLength >= ${OWN_BUFFER_BYTES} && d.byteOffset === 0 && d.buffer instanceof ArrayBuffer && d.byteLength === d.buffer.byteLength) {
      // One buffer returned twice leaves once.
      if (placed.has(d.buffer)) return placed.get(d.buffer);
      const id = ++nextArena;
      arenas.set(id, d.buffer);
      untaken.push(id);
      placed.set(d.buffer, -owns.push(id));
      return placed.get(d.buffer);
    }
    const at = align(size); size = at + d.byteLength; copies.push([d, at]); return at;
  };
  const metas = items.map((item) => { try { return place(item, claim); } catch (e) { return fail(e); } });
  const arena = new ArrayBuffer(size);
  const bytes = new Uint8Array(arena);
  for (const [d, at] of copies) bytes.set(new Uint8Array(d.buffer, d.byteOffset, d.byteLength), at);
  // A small arena leaves with the answer itself: the serializer's copies of a few KiB cost less
  // than a second call into the isolate to take it.
  if (size <= ${SMALL_ARENA_BYTES}) return { ok: true, items: metas, arena, owns };
  const id = ++nextArena;
  arenas.set(id, arena);
  return { ok: true, items: metas, arena: id, owns };
}
// The arenas packed() made, until the host takes each (a top-level ArrayBuffer leaves the isolate
// with one copy; inside an object, by a serializer that copies it several times).
const arenas = new Map();
let nextArena = 0;
// Buffers a synchronous answer handed out, which the host takes before its next call: any still
// here then (an answer the host could not read) are let go.
let untaken = [];
function dropUntaken() {
  for (const id of untaken) arenas.delete(id);
  untaken = [];
}
export function take(id) {
  const arena = arenas.get(id);
  arenas.delete(id);
  return arena;
}
function placeTensors(item, claim) {
  if (!item.ok) return item;
  const tensors = item.value;
  if (typeof tensors !== 'object' || tensors === null) throw new Error('pre must return an object of tensors by input name');
  const out = {};
  for (const [name, t] of Object.entries(tensors)) {
    const data = t?.data;
    const view = viewOf(data);
    out[name] = view === undefined ? { dtype: t?.dtype, shape: t?.shape, data } : { dtype: t.dtype, shape: t.shape, view, at: claim(data), n: data.length };
  }
  return { ok: true, tensors: out };
}
function placeResponse(item, claim) {
  if (!item.ok || item.text !== undefined || viewOf(item.bytes) !== 'Uint8Array') return item;
  return { ok: true, at: claim(item.bytes), n: item.bytes.byteLength, contentType: item.contentType };
}
// JSON.stringify's text, made faster for arrays of numbers (by join: 40-60 against ~130 µs a
// request for 1024 of them in bench:hooklane; a string built by += was slower than JSON.stringify
// in here): arrays and plain objects without toJSON are walked, their pieces joined; anything
// else, and past 64 levels (a cycle then throws as it would), is JSON.stringify's.
const plainProto = (v) => { const p = Object.getPrototypeOf(v); return p === Object.prototype || p === null; };
function finiteNumbers(v) {
  for (let i = 0; i < v.length; i++) { const e = v[i]; if (typeof e !== 'number' || e - e !== 0) return false; }
  return true;
}
function jsonText(v, depth) {
  if (typeof v === 'number') return v - v === 0 ? '' + v : 'null';
  if (typeof v !== 'object' || v === null || depth > 64 || typeof v.toJSON === 'function') return JSON.stringify(v);
  if (Array.isArray(v)) {
    if (finiteNumbers(v)) return '[' + v.join(',') + ']';
    const parts = new Array(v.length);
    for (let i = 0; i < v.length; i++) parts[i] = jsonText(v[i], depth + 1) ?? 'null';
    return '[' + parts.join(',') + ']';
  }
  if (!plainProto(v)) return JSON.stringify(v);
  const parts = [];
  for (const k of Object.keys(v)) {
    const t = jsonText(v[k], depth + 1);
    if (t !== undefined) parts.push(JSON.stringify(k) + ':' + t);
  }
  return '{' + parts.join(',') + '}';
}
function responseOut(r) {
  if (r !== null && typeof r === 'object' && r.$binary === true) {
    if (r.bytes?.byteLength > MAX_RESPONSE) throw tooLarge(r.bytes.byteLength);
    return { ok: true, bytes: r.bytes, contentType: r.contentType };
  }
  const text = jsonText(r, 0);
  if (text === undefined) throw new Error('post returned nothing JSON can hold');
  if (text.length > MAX_RESPONSE) throw tooLarge(text.length);
  return { ok: true, text };
}
// Requests' bodies in one crossing: the ArrayBuffer \`bytes\` (moved in, not copied) holds the
// binary ones end to end (\`ends[i]\` is where request i's ends), \`texts\` the JSON ones (decoded by
// the host) end to end (\`ends[i]\` is -1 - its end), and a large one is the next of \`own\` (\`ends[i]\`
// null): an ArrayBuffer moved in, or where it lies in the inbox, [from, to), copied out here before
// any hook runs (the host writes the next crossing's there); \`bytes\` is null where it would be
// empty. Each hook gets a body of its own, not a view of the others'.
let inbox = new Uint8Array(0);
export function useInbox(shared) { inbox = new Uint8Array(shared); }
function bodies(buffer, texts, ends, own) {
  const bytes = new Uint8Array(buffer ?? 0);
  let b = 0;
  let t = 0;
  let o = 0;
  return ends.map((e) => {
    if (e === null) { const x = own[o++]; return Array.isArray(x) ? inbox.slice(x[0], x[1]) : new Uint8Array(x); }
    const s = e < 0 ? t : b;
    if (e < 0) return texts.slice(s, (t = -1 - e));
    b = e;
    return s === 0 && e === bytes.byteLength && e > 0 ? bytes : bytes.slice(s, e);
  });
}
// A JSON body the host parsed (crossing.ts packBodies): its arrays of numbers made again where
// they were, from the Float64Array of their leaves in \`bytes\`, as JSON.parse would have made them.
function rebuilt(buffer, { value, at, packs }) {
  let root = value;
  for (const [path, from, shape] of packs) {
    const n = shape.reduce((a, d) => a * d, 1);
    const numbers = new Float64Array(buffer, at + from * 8, n);
    let i = 0;
    const build = (d) => {
      const out = new Array(shape[d]);
      if (d === shape.length - 1) for (let k = 0; k < out.length; k++) out[k] = numbers[i++];
      else for (let k = 0; k < out.length; k++) out[k] = build(d + 1);
      return out;
    };
    const made = build(0);
    if (path.length === 0) root = made;
    else path.slice(0, -1).reduce((o, key) => o[key], root)[path[path.length - 1]] = made;
  }
  return root;
}
export function preMany(budget, bytes, texts, ends, types, parsed, ...own) {
  dropUntaken();
  const all = bodies(bytes, texts, ends, own);
  return many(types.length, budget, (i) => {
    const b = all[i];
    const request = parsed[i] ? jsonRequest(() => rebuilt(bytes, parsed[i]), types[i])
      : typeof b === 'string' ? jsonRequest(parseText(() => b), types[i]) : { kind: 'bytes', bytes: b, contentType: types[i] };
    return hook.pre(request, context);
  }, (value) => ({ ok: true, value }), (out, sync) => packed(out, placeTensors, sync));
}
// In post, where most hooks never read the request's body, it enters only when read (\`read(i)\`: a host call).
function lazyRequest(i, read, contentType, json) {
  let got;
  const text = () => (got ??= { value: read.applySync(undefined, [i], { result: { copy: true } }) }).value;
  return json ? jsonRequest(parseText(text), contentType) : { kind: 'bytes', get bytes() { return text(); }, contentType };
}
// Each output a copy of its own (its rows of the batch's outputs, in the ArrayBuffer \`bytes\`), so
// a hook that reads a tensor's .buffer reads its own request's rows only.
function outputsOf(bytes, metas) {
  const outputs = {};
  for (const [name, m] of Object.entries(metas)) {
    const View = VIEWS[m.view];
    outputs[name] = { dtype: m.dtype, shape: m.shape, data: new View(bytes.slice(m.at, m.at + m.n * View.BYTES_PER_ELEMENT)) };
  }
  return outputs;
}
export function postMany(budget, bytes, metas, types, jsons, read) {
  dropUntaken();
  return many(types.length, budget, (i) => hook.post(outputsOf(bytes, metas[i]), lazyRequest(i, read, types[i], jsons[i]), context), responseOut, (out, sync) => packed(out, placeResponse, sync));
}
`;

/** What a bundle built with a Node banner imports: a `require` that says hooks have none. */
export const NODE_MODULE_SHIM = `export function createRequire() { return (name) => { throw new Error('hooks run without Node.js modules: require(' + JSON.stringify(name) + ') is not available'); }; }`;
