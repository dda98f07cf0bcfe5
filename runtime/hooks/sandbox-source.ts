/**
 * The code a hook's isolate runs besides the hook (sandbox.ts loads it): the prelude that builds its
 * globals on the host's callbacks, the glue module that calls the hook and hands failures back as
 * values, and the stand-in for `node:module` that a bundle with a Node banner imports.
 */

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
  const r = $image.applySync(undefined, [name, ...args], { arguments: { copy: true }, result: { copy: true } });
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
 * The module that calls the hook (imported as 'hook'), and hands failures back as values. A
 * response over `maxResponseBytes` fails there, before it is copied out of the isolate.
 */
export const glue = (maxResponseBytes: number): string => String.raw`
import hook from 'hook';
const MAX_RESPONSE = ${maxResponseBytes};
const tooLarge = (n) => new Error('post returned ' + n + ' bytes, over its limit of ' + MAX_RESPONSE + ' (limits.maxResponseMb)');
let context;
const fail = (e, input = false) => ({ ok: false, message: String(e instanceof Error ? e.message : e).slice(0, 8192), input: input || e?.code === 'INVALID_INPUT', reason: typeof e?.reason === 'string' ? e.reason : undefined, stack: e instanceof Error && typeof e.stack === 'string' ? e.stack.slice(0, 8192) : undefined });
// A JSON body arrives as its text (decoded by the host), any other as its bytes. In pre it comes
// with the call; in post, where most hooks never read it, only when read (\`read\`: a host call).
function request(body, contentType) {
  if (typeof body !== 'string') return { kind: 'bytes', bytes: body, contentType };
  return jsonRequest(() => body, contentType);
}
function jsonRequest(text, contentType) {
  let parsed;
  return { kind: 'json', contentType, get json() {
    if (parsed === undefined) {
      try { parsed = { value: JSON.parse(text()) }; } catch (e) { const err = new Error('the body is not valid JSON: ' + e.message); err.code = 'INVALID_INPUT'; throw err; }
    }
    return parsed.value;
  } };
}
function lazyRequest(body, contentType, json) {
  let got;
  const read = () => (got ??= { value: body.applySync(undefined, [], { result: { copy: true } }) }).value;
  return json ? jsonRequest(read, contentType) : { kind: 'bytes', get bytes() { return read(); }, contentType };
}
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
// A hook that answers synchronously is answered in the same call (no thread hop); one that returns
// a promise parks it, and the host waits on it with wait(id).
function settle(value, then) {
  if (value !== null && typeof value === 'object' && typeof value.then === 'function') {
    const id = ++nextPark;
    parked.set(id, Promise.resolve(value).then(then, (e) => fail(e)));
    return { parked: id };
  }
  return then(value);
}
export function wait(id) {
  const p = parked.get(id);
  parked.delete(id);
  return p;
}
function tensorsOut(tensors) {
  if (typeof tensors !== 'object' || tensors === null) throw new Error('pre must return an object of tensors by input name');
  const out = {};
  for (const [name, t] of Object.entries(tensors)) out[name] = { dtype: t?.dtype, shape: t?.shape, data: t?.data };
  return { ok: true, tensors: out };
}
function responseOut(r) {
  if (r !== null && typeof r === 'object' && r.$binary === true) {
    if (r.bytes?.byteLength > MAX_RESPONSE) throw tooLarge(r.bytes.byteLength);
    return { ok: true, bytes: r.bytes, contentType: r.contentType };
  }
  const text = JSON.stringify(r);
  if (text === undefined) throw new Error('post returned nothing JSON can hold');
  if (text.length > MAX_RESPONSE) throw tooLarge(text.length);
  return { ok: true, text };
}
const guarded = (fn) => (value) => { try { return fn(value); } catch (e) { return fail(e); } };
export function pre(body, contentType) {
  try { return settle(hook.pre(request(body, contentType), context), guarded(tensorsOut)); } catch (e) { return fail(e); }
}
export function post(outputs, body, contentType, json) {
  try { return settle(hook.post(outputs, lazyRequest(body, contentType, json), context), guarded(responseOut)); } catch (e) { return fail(e); }
}
`;

/** What a bundle built with a Node banner imports: a `require` that says hooks have none. */
export const NODE_MODULE_SHIM = `export function createRequire() { return (name) => { throw new Error('hooks run without Node.js modules: require(' + JSON.stringify(name) + ') is not available'); }; }`;
