/**
 * A function's hook in a V8 isolate of its own (isolated-vm), as Cloudflare Workers run user code:
 * no `process`, no `require` or `import` of anything outside its bundle, no file, network, child
 * process or thread — only what is handed to it: the `@hearth/sdk` helpers bundled with it,
 * TextEncoder/TextDecoder, URL, typed arrays, crypto.getRandomValues, console (to the function's
 * log) and decodeImage. Its memory, JS heap and ArrayBuffers together, is capped at
 * limits.hookMemoryMb; past it the isolate is disposed, the request fails, and the next request
 * gets a new isolate.
 *
 * Bytes cross the isolate boundary by copy (a request's body in, its tensors or response out).
 */
import { randomFillSync } from 'node:crypto';
import { readFile } from 'node:fs/promises';

import ivm from 'isolated-vm';

import type { HookTensors } from '../../sdk/hook.js';
import { decodeImage } from './images.js';

/** What the glue answers: a result, or a failure as a value (never a throw across the boundary). */
export type SandboxOutcome<T> = ({ ok: true } & T) | { ok: false; message: string; input: boolean; reason?: string };

/** Globals of the sandbox, built on the host callbacks `$log`, `$random`, `$url`, `$image`. */
const PRELUDE = String.raw`
const $log = globalThis.$log, $random = globalThis.$random, $url = globalThis.$url, $image = globalThis.$image;
delete globalThis.$log; delete globalThis.$random; delete globalThis.$url; delete globalThis.$image;
const show = (v) => { if (typeof v === 'string') return v; if (v instanceof Error) return v.stack || v.message; try { return JSON.stringify(v); } catch { return String(v); } };
const logAt = (level) => (...args) => $log.applySync(undefined, [level, args.map(show).join(' ')]);
globalThis.console = { log: logAt('info'), info: logAt('info'), debug: logAt('debug'), warn: logAt('warn'), error: logAt('error') };
class TextEncoder {
  get encoding() { return 'utf-8'; }
  encode(s = '') {
    s = String(s); const out = new Uint8Array(s.length * 3); let n = 0;
    for (let i = 0; i < s.length; i++) {
      let c = s.charCodeAt(i);
      if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) { const d = s.charCodeAt(i + 1); if (d >= 0xdc00 && d < 0xe000) { c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00); i++; } else c = 0xfffd; }
      else if (c >= 0xd800 && c < 0xe000) c = 0xfffd;
      if (c < 0x80) out[n++] = c;
      else if (c < 0x800) { out[n++] = 0xc0 | (c >> 6); out[n++] = 0x80 | (c & 63); }
      else if (c < 0x10000) { out[n++] = 0xe0 | (c >> 12); out[n++] = 0x80 | ((c >> 6) & 63); out[n++] = 0x80 | (c & 63); }
      else { out[n++] = 0xf0 | (c >> 18); out[n++] = 0x80 | ((c >> 12) & 63); out[n++] = 0x80 | ((c >> 6) & 63); out[n++] = 0x80 | (c & 63); }
    }
    return out.slice(0, n);
  }
}
class TextDecoder {
  constructor(label = 'utf-8') { if (!/^utf-?8$/i.test(label)) throw new RangeError('only utf-8 is supported'); }
  get encoding() { return 'utf-8'; }
  decode(input) {
    if (input === undefined) return '';
    const b = input instanceof Uint8Array ? input : ArrayBuffer.isView(input) ? new Uint8Array(input.buffer, input.byteOffset, input.byteLength) : new Uint8Array(input);
    let s = ''; const parts = [];
    for (let i = 0; i < b.length;) {
      const c = b[i]; let cp = 0xfffd, n = 1;
      if (c < 0x80) cp = c;
      else if (c >= 0xc2 && c < 0xe0 && (b[i + 1] & 0xc0) === 0x80) { cp = ((c & 31) << 6) | (b[i + 1] & 63); n = 2; }
      else if (c >= 0xe0 && c < 0xf0 && (b[i + 1] & 0xc0) === 0x80 && (b[i + 2] & 0xc0) === 0x80) { cp = ((c & 15) << 12) | ((b[i + 1] & 63) << 6) | (b[i + 2] & 63); n = 3; if (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000)) cp = 0xfffd; }
      else if (c >= 0xf0 && c < 0xf5 && (b[i + 1] & 0xc0) === 0x80 && (b[i + 2] & 0xc0) === 0x80 && (b[i + 3] & 0xc0) === 0x80) { cp = ((c & 7) << 18) | ((b[i + 1] & 63) << 12) | ((b[i + 2] & 63) << 6) | (b[i + 3] & 63); n = 4; if (cp < 0x10000 || cp > 0x10ffff) cp = 0xfffd; }
      s += String.fromCodePoint(cp); i += n;
      if (s.length > 8192) { parts.push(s); s = ''; }
    }
    parts.push(s);
    return parts.join('');
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
const __hearth = { decodeImage: (bytes) => $image.applySync(undefined, [bytes], { arguments: { copy: true }, result: { copy: true } }) };
Object.assign(globalThis, { TextEncoder, TextDecoder, URL, URLSearchParams, crypto, __hearth });
undefined;
`;

/** The module that calls the hook (imported as 'hook'), and hands failures back as values. */
const GLUE = String.raw`
import hook from 'hook';
let context;
const JSON_TYPE = /^application\/(.+\+)?json\b|^text\/json\b/i;
const decoder = new TextDecoder();
const encoder = new TextEncoder();
const fail = (e, input = false) => ({ ok: false, message: e instanceof Error ? e.message : String(e), input: input || e?.code === 'INVALID_INPUT', reason: typeof e?.reason === 'string' ? e.reason : undefined });
function request(body, contentType) {
  if (!JSON_TYPE.test(contentType)) return { kind: 'bytes', bytes: body, contentType };
  let parsed;
  return { kind: 'json', contentType, get json() {
    if (parsed === undefined) {
      try { parsed = { value: JSON.parse(decoder.decode(body)) }; } catch (e) { const err = new Error('the body is not valid JSON: ' + e.message); err.code = 'INVALID_INPUT'; throw err; }
    }
    return parsed.value;
  } };
}
export async function setup(base) {
  try {
    if (!hook || typeof hook.pre !== 'function' || typeof hook.post !== 'function') throw new Error('the hook module must \x60export default defineHook({ pre, post })\x60');
    context = { ...base, state: hook.setup ? await hook.setup(base) : undefined };
    return { ok: true };
  } catch (e) { return fail(e); }
}
export async function pre(body, contentType) {
  try {
    const tensors = await hook.pre(request(body, contentType), context);
    if (typeof tensors !== 'object' || tensors === null) throw new Error('pre must return an object of tensors by input name');
    const out = {};
    for (const [name, t] of Object.entries(tensors)) out[name] = { dtype: t?.dtype, shape: t?.shape, data: t?.data };
    return { ok: true, tensors: out };
  } catch (e) { return fail(e); }
}
export async function post(outputs, body, contentType) {
  try {
    const r = await hook.post(outputs, request(body, contentType), context);
    if (r !== null && typeof r === 'object' && r.$binary === true) return { ok: true, bytes: r.bytes, contentType: r.contentType };
    const text = JSON.stringify(r);
    if (text === undefined) throw new Error('post returned nothing JSON can hold');
    return { ok: true, bytes: encoder.encode(text), contentType: 'application/json' };
  } catch (e) { return fail(e); }
}
`;

/** What a bundle built with a Node banner imports: a `require` that says hooks have none. */
const NODE_MODULE_SHIM = `export function createRequire() { return (name) => { throw new Error('hooks run without Node.js modules: require(' + JSON.stringify(name) + ') is not available'); }; }`;

export interface SandboxOptions {
  bundlePath: string;
  memoryMb: number;
  /** The hook's console, by level. */
  log(level: string, text: string): void;
}

interface GlueCalls {
  setup: ivm.Reference;
  pre: ivm.Reference;
  post: ivm.Reference;
}

export class HookSandbox {
  readonly #isolate: ivm.Isolate;
  readonly #calls: GlueCalls;

  private constructor(isolate: ivm.Isolate, calls: GlueCalls) {
    this.#isolate = isolate;
    this.#calls = calls;
  }

  /** Loads the bundle into a new isolate (its top level runs here; setup() runs on `setup`). */
  static async create(options: SandboxOptions): Promise<HookSandbox> {
    const code = await readFile(options.bundlePath, 'utf8');
    const isolate = new ivm.Isolate({ memoryLimit: options.memoryMb });
    try {
      const context = await isolate.createContext();
      const g = context.global;
      await g.set('globalThis', g.derefInto());
      await g.set('$log', new ivm.Reference((level: string, text: string) => options.log(level, text)));
      await g.set('$random', new ivm.Reference((n: number) => randomFillSync(new Uint8Array(Math.min(65_536, Math.max(0, n))))));
      await g.set('$url', new ivm.Reference((input: string, base?: string) => {
        const u = new globalThis.URL(input, base);
        return { href: u.href, origin: u.origin, protocol: u.protocol, username: u.username, password: u.password, host: u.host, hostname: u.hostname, port: u.port, pathname: u.pathname, search: u.search, hash: u.hash };
      }));
      await g.set('$image', new ivm.Reference((bytes: Uint8Array) => decodeImage(bytes)));
      await context.eval(PRELUDE);
      const hook = await isolate.compileModule(code, { filename: 'hook.mjs' });
      const shim = await isolate.compileModule(NODE_MODULE_SHIM);
      const glue = await isolate.compileModule(GLUE, { filename: 'hearth-glue.mjs' });
      const resolve = (specifier: string): ivm.Module => {
        if (specifier === 'hook') return hook;
        if (specifier === 'node:module' || specifier === 'module') return shim;
        throw new Error(`hooks run without Node.js modules or packages outside their bundle: import ${JSON.stringify(specifier)} is not available`);
      };
      await shim.instantiate(context, resolve);
      await hook.instantiate(context, resolve);
      await glue.instantiate(context, resolve);
      await glue.evaluate();
      const ns = glue.namespace;
      const calls = {
        setup: (await ns.get('setup', { reference: true })) as ivm.Reference,
        pre: (await ns.get('pre', { reference: true })) as ivm.Reference,
        post: (await ns.get('post', { reference: true })) as ivm.Reference,
      };
      return new HookSandbox(isolate, calls);
    } catch (error) {
      if (!isolate.isDisposed) isolate.dispose();
      throw error;
    }
  }

  /** False once the isolate is gone (past its memory limit): the caller makes a new one. */
  get alive(): boolean {
    return !this.#isolate.isDisposed;
  }

  setup(base: object): Promise<SandboxOutcome<object>> {
    return this.#call('setup', [base]);
  }

  pre(body: Uint8Array, contentType: string): Promise<SandboxOutcome<{ tensors: HookTensors }>> {
    return this.#call('pre', [body, contentType]);
  }

  post(outputs: HookTensors, body: Uint8Array, contentType: string): Promise<SandboxOutcome<{ bytes: Uint8Array; contentType: string }>> {
    return this.#call('post', [outputs, body, contentType]);
  }

  async #call<T>(name: 'setup' | 'pre' | 'post', args: unknown[]): Promise<SandboxOutcome<T>> {
    try {
      return (await this.#calls[name].apply(undefined, args, { arguments: { copy: true }, result: { promise: true, copy: true } })) as SandboxOutcome<T>;
    } catch (error) {
      const disposed = this.#isolate.isDisposed;
      const message = (error as Error)?.message ?? String(error);
      return { ok: false, input: false, message: disposed ? `ran out of memory (its ArrayBuffers and heap are capped at limits.hookMemoryMb): ${message}` : message };
    }
  }

  dispose(): void {
    if (!this.#isolate.isDisposed) this.#isolate.dispose();
  }
}
