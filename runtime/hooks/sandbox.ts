/**
 * A function's hook in a V8 isolate of its own (isolated-vm), as Cloudflare Workers run user code:
 * no `process`, no `require` or `import` of anything outside its bundle, no file, network, child
 * process or thread — only what is handed to it: the `@hearth/sdk` helpers bundled with it,
 * TextEncoder/TextDecoder, URL, typed arrays, crypto.getRandomValues, console (to the function's
 * log) and the image functions (images.ts). Its memory, JS heap and ArrayBuffers together, is capped at
 * limits.hookMemoryMb; past it the isolate is disposed, the request fails, and the next request
 * gets a new isolate.
 *
 * Bytes cross the isolate boundary by copy (a request's body in, its tensors or response out).
 * What the isolate runs besides the hook (its globals' prelude, the glue): sandbox-source.ts.
 *
 * isolated-vm is loaded by the first sandbox a thread makes, never by a thread that makes none: a
 * thread that has loaded it must not end while its process lives (see quiesce below).
 */
import { randomFillSync } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { SourceMap } from 'node:module';
import { getHeapSnapshot } from 'node:v8';

import type ivm from 'isolated-vm';

import { InvalidInputError } from '../../sdk/errors.js';
import type { Tensor, TensorsByName } from '../../sdk/tensor.js';
import { type ImageHost, imageHost, MAX_PIXELS } from './images.js';
import { glue, NODE_MODULE_SHIM, PRELUDE } from './sandbox-source.js';
import { inlineSourceMap, mapStack } from './stack.js';

const JSON_TYPE = /^application\/(.+\+)?json\b|^text\/json\b/i;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** What the glue answers: a result, or a failure as a value (never a throw across the boundary). */
export type SandboxOutcome<T> =
  | ({ ok: true } & T)
  | {
      ok: false;
      message: string;
      input: boolean;
      reason?: string;
      /** The thrown error's stack frames, mapped to the hook's own sources (hook.ts:LINE:COL). */
      stack?: string;
    };

export interface SandboxOptions {
  bundlePath: string;
  memoryMb: number;
  /** The largest response post may return (limits.maxResponseMb). */
  maxResponseBytes: number;
  /** WebAssembly in the isolate (limits.hookWebAssembly). */
  webAssembly: boolean;
  /** Longest a hook may run (ms): past it V8 stops it (limits.hookTimeoutMs). */
  timeoutMs: number;
  /** The hook's console, by level. */
  log(level: string, text: string): void;
}

interface GlueCalls {
  setup: ivm.Reference;
  pre: ivm.Reference;
  post: ivm.Reference;
  wait: ivm.Reference;
}

export class HookSandbox {
  readonly #isolate: ivm.Isolate;
  readonly #calls: GlueCalls;
  readonly #timeout: number;
  /** The bundle's own source map (esbuild's inline one), to name a failure's frames in hook.ts. */
  readonly #sourceMap: SourceMap | undefined;

  private constructor(isolate: ivm.Isolate, calls: GlueCalls, timeoutMs: number, sourceMap?: SourceMap) {
    this.#isolate = isolate;
    this.#calls = calls;
    this.#timeout = timeoutMs;
    this.#sourceMap = sourceMap;
  }

  /** Loads the bundle into a new isolate (its top level runs here; setup() runs on `setup`). */
  static async create(options: SandboxOptions): Promise<HookSandbox> {
    const code = await readFile(options.bundlePath, 'utf8');
    const ivm = await isolatedVm();
    const isolate = new ivm.Isolate({ memoryLimit: options.memoryMb });
    try {
      const context = await isolate.createContext();
      const g = context.global;
      await g.set('globalThis', g.derefInto());
      await g.set('$log', new ivm.Reference((level: string, text: string) => options.log(level, text)));
      await g.set(
        '$random',
        new ivm.Reference((n: number) => randomFillSync(new Uint8Array(Math.min(65_536, Math.max(0, n))))),
      );
      await g.set(
        '$url',
        new ivm.Reference((input: string, base?: string) => {
          const u = new globalThis.URL(input, base);
          return {
            href: u.href,
            origin: u.origin,
            protocol: u.protocol,
            username: u.username,
            password: u.password,
            host: u.host,
            hostname: u.hostname,
            port: u.port,
            pathname: u.pathname,
            search: u.search,
            hash: u.hash,
          };
        }),
      );
      const images = imageHost({ maxPixels: MAX_PIXELS, maxBytes: options.memoryMb * 2 ** 20 });
      await g.set(
        '$image',
        new ivm.Reference((name: string, ...args: unknown[]) => {
          try {
            if (!Object.hasOwn(images, name)) throw new Error(`no image function ${name}`);
            return { ok: true, value: (images[name as keyof ImageHost] as (...a: unknown[]) => unknown)(...args) };
          } catch (error) {
            return { ok: false, message: (error as Error).message, input: error instanceof InvalidInputError };
          }
        }),
      );
      await g.set('$encode', new ivm.Reference((text: string) => encoder.encode(text)));
      await g.set('$decode', new ivm.Reference((bytes: Uint8Array) => decoder.decode(bytes)));
      await g.set('$webAssembly', options.webAssembly);
      await context.eval(PRELUDE);
      const hook = await isolate.compileModule(code, { filename: 'hook.mjs' });
      const shim = await isolate.compileModule(NODE_MODULE_SHIM);
      const glueModule = await isolate.compileModule(glue(options.maxResponseBytes), { filename: 'hearth-glue.mjs' });
      const resolve = (specifier: string): ivm.Module => {
        if (specifier === 'hook') return hook;
        if (specifier === 'node:module' || specifier === 'module') return shim;
        throw new Error(
          `hooks run without Node.js modules or packages outside their bundle: import ${JSON.stringify(specifier)} is not available`,
        );
      };
      await shim.instantiate(context, resolve);
      await hook.instantiate(context, resolve);
      await glueModule.instantiate(context, resolve);
      await glueModule.evaluate();
      const ns = glueModule.namespace;
      const calls = {
        setup: (await ns.get('setup', { reference: true })) as ivm.Reference,
        pre: (await ns.get('pre', { reference: true })) as ivm.Reference,
        post: (await ns.get('post', { reference: true })) as ivm.Reference,
        wait: (await ns.get('wait', { reference: true })) as ivm.Reference,
      };
      return new HookSandbox(isolate, calls, options.timeoutMs, inlineSourceMap(code));
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

  /** A JSON body enters as its text, decoded here by the native codec; any other as bytes. */
  #body(body: Uint8Array, contentType: string): Uint8Array | string {
    return JSON_TYPE.test(contentType) ? decoder.decode(body) : body;
  }

  pre(body: Uint8Array, contentType: string): Promise<SandboxOutcome<{ tensors: TensorsByName }>> {
    return this.#call('pre', [this.#body(body, contentType), contentType]);
  }

  /**
   * The request's body enters post only if the hook reads it (most do not): a 602 KB image was
   * copied into the isolate a second time per request, a 3 MB JSON body decoded and copied again.
   */
  async post(
    outputs: TensorsByName,
    body: Uint8Array,
    contentType: string,
  ): Promise<SandboxOutcome<{ bytes: Uint8Array; contentType: string }>> {
    // Past its call the body is let go: a request the hook kept cannot hold it in this process
    // (outside the isolate's memory cap), and reading it then throws.
    let held: Uint8Array | undefined = body;
    const read = new lib!.Reference(() => {
      if (held === undefined) throw new Error("a request's body can be read only during its own post call");
      return this.#body(held, contentType);
    });
    let r: SandboxOutcome<{ bytes?: Uint8Array; text?: string; contentType?: string }>;
    try {
      r = await this.#call('post', [ownBuffers(outputs), read, contentType, JSON_TYPE.test(contentType)]);
    } finally {
      held = undefined;
      read.release();
    }
    if (!r.ok || r.text === undefined) return r as SandboxOutcome<{ bytes: Uint8Array; contentType: string }>;
    return { ok: true, bytes: encoder.encode(r.text), contentType: 'application/json' };
  }

  /**
   * Runs a glue function on this (the hook worker's) thread: a hook that answers synchronously is
   * answered without a hop to isolated-vm's threads; one that returns a promise is awaited through
   * them. V8 stops hook code past the time limit (this thread's termination could not: it runs
   * inside the isolate's call).
   */
  async #call<T>(name: 'setup' | 'pre' | 'post', args: unknown[]): Promise<SandboxOutcome<T>> {
    const started = performance.now();
    const limit = name === 'setup' ? Math.max(this.#timeout, 60_000) : this.#timeout;
    try {
      const r = (
        name === 'setup'
          ? await this.#settled(
              this.#calls.setup.apply(undefined, args, {
                arguments: { copy: true },
                result: { promise: true, copy: true },
                timeout: limit,
              }),
              limit,
            )
          : this.#calls[name].applySync(undefined, args, {
              arguments: { copy: true },
              result: { copy: true },
              timeout: limit,
            })
      ) as SandboxOutcome<T> | { parked: number };
      if ('parked' in r) {
        // The limit bounds the whole call, its promise included: V8's timeout stops only code
        // that runs, and a promise that never settles runs none.
        const left = Math.max(1, Math.round(limit - (performance.now() - started)));
        const settled = (await this.#settled(
          this.#calls.wait.apply(undefined, [r.parked], { result: { promise: true, copy: true }, timeout: left }),
          left,
        )) as SandboxOutcome<T>;
        return settled.ok || settled.stack === undefined
          ? settled
          : { ...settled, stack: mapStack(settled.stack, this.#sourceMap) };
      }
      return r.ok || r.stack === undefined ? r : { ...r, stack: mapStack(r.stack, this.#sourceMap) };
    } catch (error) {
      const disposed = this.#isolate.isDisposed;
      const message = (error as Error)?.message ?? String(error);
      return {
        ok: false,
        input: false,
        message: disposed
          ? `ran out of memory (its ArrayBuffers and heap are capped at limits.hookMemoryMb): ${message}`
          : message,
      };
    }
  }

  /** `work`, or a timeout failure once `ms` have passed without it settling. */
  async #settled<T>(work: Promise<T>, ms: number): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`timed out: its promise had not settled after ${Math.round(ms)} ms`)),
        ms,
      );
    });
    try {
      return await Promise.race([work, late]);
    } finally {
      clearTimeout(timer);
      work.catch(() => undefined);
    }
  }

  dispose(): void {
    if (!this.#isolate.isDisposed) this.#isolate.dispose();
  }
}

/** isolated-vm, once this thread has loaded it (it has made a sandbox). */
let lib: typeof ivm | undefined;

async function isolatedVm(): Promise<typeof ivm> {
  lib ??= (await import('isolated-vm')).default;
  return lib;
}

/**
 * Makes this thread safe to end, once its sandboxes are disposed: collects every isolated-vm handle
 * its heap holds while isolated-vm can still account for it. A Node thread that ends runs one last
 * garbage collection after isolated-vm's own teardown when V8 was part way through marking (more
 * likely the busier the machine); a handle collected then asks for an environment that is gone, and
 * isolated-vm aborts the whole process (`IsolateEnvironment::GetCurrent(): environment != nullptr`).
 * A full collection here leaves nothing for that one to find, and no marking under way.
 */
export function quiesce(): void {
  if (lib === undefined) return;
  // A heap snapshot collects all the garbage there is first (V8's CollectAllAvailableGarbage); the
  // snapshot itself, of a thread's few MB, is let go unread. (--expose-gc is not used: a process-wide
  // flag that threads would race to set and clear, and that every later isolate would see.)
  getHeapSnapshot().destroy();
}

/**
 * Outputs whose data is a part of a larger buffer (a request's rows of its batch's output) as
 * copies of just that part: a view enters an isolate as its whole buffer, so each request of a
 * batch of 64 copied the whole batch's output in (16 MiB per batch for 4 KiB rows).
 */
function ownBuffers(outputs: TensorsByName): TensorsByName {
  let out: TensorsByName | undefined;
  for (const [name, t] of Object.entries(outputs)) {
    if (t.data.byteLength === t.data.buffer.byteLength) continue;
    out ??= { ...outputs };
    out[name] = { ...t, data: t.data.slice() } as Tensor;
  }
  return out ?? outputs;
}
