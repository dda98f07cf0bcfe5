/**
 * A function's hook in a V8 isolate of its own (isolated-vm), as Cloudflare Workers run user code:
 * no `process`, no `require` or `import` of anything outside its bundle, no file, network, child
 * process or thread — only what is handed to it: the `@hearth/sdk` helpers bundled with it,
 * TextEncoder/TextDecoder, URL, typed arrays, crypto.getRandomValues, console (to the function's
 * log) and the image functions (images.ts). Its memory, JS heap and ArrayBuffers together, is capped at
 * limits.hookMemoryMb; past it the isolate is disposed, the request fails, and the next request
 * gets a new isolate.
 *
 * Bytes cross the isolate boundary by copy (a request's body in, its tensors or response out), for
 * many requests in one crossing (crossing.ts).
 * What the isolate runs besides the hook (its globals' prelude, the glue): sandbox-source.ts.
 *
 * isolated-vm is loaded by the first sandbox a thread makes, never by a thread that makes none: a
 * thread that has loaded it must not end while its process lives (see quiesce, isolated-vm.ts).
 */
import { randomFillSync } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { SourceMap } from 'node:module';

import type ivm from 'isolated-vm';

import type { TensorsByName } from '../../sdk/tensor.js';
import { copyOf, ownsWholeBuffer } from '../tensors/index.js';
import type { Arenas } from './crossing.js';
import { crossings, INBOX_BYTES, isJson, packBodies, packOutputs, tensorsIn, viewAt } from './crossing.js';
import { imageHost, MAX_PIXELS } from './images.js';
import { imageCalls, isolatedVm, lib, moveIn, settled, urlParts } from './isolated-vm.js';
import type { RawRequest } from './messages.js';
import { glue, NODE_MODULE_SHIM, PRELUDE } from './sandbox-source.js';
import { inlineSourceMap, mapStack } from './stack.js';

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
      /** Its crossing took the isolate down with others' requests: not known to be this one's fault. */
      lost?: boolean;
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
  /**
   * A crossing that fails as a whole is not run again here one item at a time: its items come back
   * `lost`, for the caller to run elsewhere (HookWorkerData.retryElsewhere).
   */
  retryElsewhere?: boolean;
}

interface GlueCalls {
  setup: ivm.Reference;
  preMany: ivm.Reference;
  postMany: ivm.Reference;
  wait: ivm.Reference;
  take: ivm.Reference;
}

/** The most buffers one answer may hand out whole (the glue's `owns`): a tensor each, at most. */
const MAX_OWNS = 1024;

/** The glue functions the host calls by name. */
const CALLS = ['setup', 'preMany', 'postMany', 'wait', 'take'] as const;

export class HookSandbox {
  readonly #isolate: ivm.Isolate;
  readonly #calls: GlueCalls;
  /** Shared with the isolate, whose glue copies each body out at the start of its call. */
  readonly #inbox: Uint8Array;
  readonly #timeout: number;
  readonly #retryElsewhere: boolean;
  readonly #memoryBytes: number;
  /** The most bytes one crossing takes into the isolate (crossing.ts): a sixteenth of its memory. */
  readonly #maxCrossingBytes: number;
  /** The bundle's own source map (esbuild's inline one), to name a failure's frames in hook.ts. */
  readonly #sourceMap: SourceMap | undefined;

  private constructor(
    isolate: ivm.Isolate,
    calls: GlueCalls,
    inbox: Uint8Array,
    options: SandboxOptions,
    sourceMap?: SourceMap,
  ) {
    this.#isolate = isolate;
    this.#calls = calls;
    this.#inbox = inbox;
    this.#timeout = options.timeoutMs;
    this.#retryElsewhere = options.retryElsewhere ?? false;
    this.#memoryBytes = options.memoryMb * 2 ** 20;
    this.#maxCrossingBytes = this.#memoryBytes / 16;
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
      await g.set('$url', new ivm.Reference(urlParts));
      const images = imageHost({ maxPixels: MAX_PIXELS, maxBytes: options.memoryMb * 2 ** 20 });
      await g.set('$image', new ivm.Reference(imageCalls(ivm, images)));
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
      const calls = {} as GlueCalls;
      for (const name of CALLS) calls[name] = (await ns.get(name, { reference: true })) as ivm.Reference;
      // The inbox: memory this thread and the isolate share, for large bodies (crossing.ts).
      const inbox = new Uint8Array(new SharedArrayBuffer(Math.min(INBOX_BYTES, (options.memoryMb * 2 ** 20) / 16)));
      const useInbox = (await ns.get('useInbox', { reference: true })) as ivm.Reference;
      useInbox.applySync(undefined, [new ivm.ExternalCopy(inbox.buffer).copyInto({ release: true })]);
      return new HookSandbox(isolate, calls, inbox, options, inlineSourceMap(code));
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

  /** pre for each request, as few crossings into the isolate as its limits allow (crossing.ts). */
  preMany(requests: readonly RawRequest[]): Promise<SandboxOutcome<{ tensors: TensorsByName }>[]> {
    return this.#many(
      'preMany',
      requests,
      (r) => r.body.byteLength,
      (group) => {
        const { bytes, own, texts, ends, types, parsed } = packBodies(group, this.#inbox);
        // An empty pack (every body its own) is not moved in: a crossing's fixed cost for nothing.
        const owned = own.map((o) => (o instanceof Uint8Array ? moveIn(o) : o));
        return { args: [bytes.byteLength > 0 ? moveIn(bytes) : null, texts, ends, types, parsed, ...owned] };
      },
      (item, arena) => (item.ok ? { ok: true, tensors: tensorsIn(item.tensors as never, arena) } : item),
    );
  }

  /**
   * post for each request of a batch. A request's body enters only if its hook reads it (most do
   * not: a 602 KB image was copied into the isolate a second time per request). Past its call the
   * body is let go: a request the hook kept cannot hold it in this process (outside the isolate's
   * memory cap), and reading it then throws.
   */
  postMany(
    items: readonly { outputs: TensorsByName; request: RawRequest }[],
  ): Promise<SandboxOutcome<{ bytes: Uint8Array; contentType: string }>[]> {
    return this.#many(
      'postMany',
      items,
      (item) => Object.values(item.outputs).reduce((n, t) => n + t.data.byteLength, 0),
      (group) => {
        let held: (typeof group)[number][] | undefined = [...group];
        const read = new lib!.Reference((i: number) => {
          const request = held?.[i]?.request;
          if (request === undefined) throw new Error("a request's body can be read only during its own post call");
          const { body } = request; // whole, or its copy: a view would cross with all its buffer
          return isJson(request.contentType) ? decoder.decode(body) : ownsWholeBuffer(body) ? body : copyOf(body);
        });
        const { bytes, metas } = packOutputs(group.map((item) => item.outputs));
        const types = group.map((item) => item.request.contentType);
        return {
          args: [moveIn(bytes), metas, types, types.map(isJson), read],
          done: () => {
            held = undefined;
            read.release();
          },
        };
      },
      (item, arena) => {
        if (!item.ok) return item;
        if (typeof item.text === 'string')
          return { ok: true, bytes: encoder.encode(item.text), contentType: 'application/json' };
        const bytes = item.at === undefined ? item.bytes : viewAt(arena, 'Uint8Array', item.at, item.n);
        return { ok: true, bytes: bytes as Uint8Array, contentType: item.contentType as string };
      },
    );
  }

  /**
   * Runs glue function `name` on `items`, in crossings (crossing.ts) of at most a sixteenth of the
   * isolate's memory; the glue takes new items for half the hook's time limit, and is called again
   * for the rest. A crossing that fails as a whole (past the limit, out of memory) is run again one
   * item at a time, so only the request that loops or overflows fails: here, or (retryElsewhere)
   * by the caller elsewhere, with every later crossing's items.
   */
  async #many<I, R>(
    name: 'preMany' | 'postMany',
    items: readonly I[],
    bytesOf: (item: I) => number,
    pack: (group: readonly I[]) => { args: unknown[]; done?: () => void },
    read: (item: SandboxOutcome<Record<string, unknown>>, arena: Arenas) => SandboxOutcome<R>,
  ): Promise<SandboxOutcome<R>[]> {
    const results: SandboxOutcome<R>[] = [];
    // Once a crossing has failed (retryElsewhere), every later item goes back unrun, as this.
    let givenBack: SandboxOutcome<R> | undefined;
    for (const group of crossings(items, bytesOf, this.#maxCrossingBytes)) {
      if (givenBack) for (const _ of group) results.push(givenBack);
      let rest = givenBack ? [] : group;
      while (rest.length > 0) {
        const { args, done } = pack(rest);
        let r: SandboxOutcome<{ items: unknown; arena: unknown; owns?: unknown }>;
        try {
          r = await this.#call(name, [this.#timeout / 2, ...args]);
        } finally {
          done?.();
        }
        const answered = r.ok && Array.isArray(r.items) ? r.items.length : 0;
        if (!r.ok || answered === 0 || answered > rest.length) {
          const failed = r.ok ? { ok: false as const, input: false, message: 'the sandbox answered out of turn' } : r;
          if (rest.length === 1) results.push(failed);
          // The caller runs each again alone: elsewhere, or (the isolate is gone) on a new one.
          else if (this.#retryElsewhere || !this.alive) for (const _ of rest) results.push({ ...failed, lost: true });
          else for (const item of rest) results.push(...(await this.#many(name, [item], bytesOf, pack, read)));
          if (this.#retryElsewhere) givenBack = { ...failed, lost: true };
          break;
        }
        const arena = { packed: this.#take(r.arena), owns: Array.isArray(r.owns) ? r.owns : [] };
        for (const item of (r as { items: SandboxOutcome<Record<string, unknown>>[] }).items) {
          try {
            results.push(read(item?.ok === true ? item : this.#mapped(item as never), arena));
          } catch (error) {
            results.push({ ok: false, input: false, message: (error as Error).message });
          }
        }
        rest = rest.slice(answered);
      }
    }
    return results;
  }

  /**
   * Runs a glue function on this (the hook worker's) thread: a hook that answers synchronously is
   * answered without a hop to isolated-vm's threads; one that returns a promise is awaited through
   * them. V8 stops hook code past the time limit (this thread's termination could not: it runs
   * inside the isolate's call).
   */
  async #call<T>(name: 'setup' | 'preMany' | 'postMany', args: unknown[]): Promise<SandboxOutcome<T>> {
    const started = performance.now();
    const limit = name === 'setup' ? Math.max(this.#timeout, 60_000) : this.#timeout;
    try {
      const r = (
        name === 'setup'
          ? await settled(
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
      ) as (SandboxOutcome<T> & { owns?: unknown }) | { parked: number };
      // Buffers the hooks returned leave now, before any hook runs again and could change them.
      if ('owns' in r && Array.isArray(r.owns)) r.owns = this.#takeOwns(r.owns);
      if ('parked' in r) {
        // The limit bounds the whole call, its promise included: V8's timeout stops only code
        // that runs, and a promise that never settles runs none.
        const left = Math.max(1, Math.round(limit - (performance.now() - started)));
        const outcome = (await settled(
          this.#calls.wait.apply(undefined, [r.parked], { result: { promise: true, copy: true }, timeout: left }),
          left,
        )) as SandboxOutcome<T>;
        return outcome.ok ? outcome : this.#mapped(outcome);
      }
      return r.ok ? r : this.#mapped(r);
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

  /**
   * The arena `id` of a crossing's answer (the glue's take): copied out of the isolate once, and
   * moved into this one; or the arena itself, where the answer held it. Undefined if it cannot be
   * had (its items then fail as they read it).
   */
  #take(id: unknown): ArrayBuffer | undefined {
    if (id instanceof ArrayBuffer) return id; // a small one, in the answer itself (SMALL_ARENA_BYTES)
    if (typeof id !== 'number') return undefined;
    try {
      const copy = this.#calls.take.applySync(undefined, [id], {
        result: { externalCopy: true },
        timeout: this.#timeout,
      }) as ivm.ExternalCopy<ArrayBuffer>;
      const arena = copy.copy({ release: true, transferIn: true });
      return arena instanceof ArrayBuffer ? arena : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * The buffers a synchronous answer handed out (the glue's `owns`), taken while they fit the
   * isolate's own memory cap together: each was in the isolate, but a hook could name one many
   * times, and their copies here are outside that cap. Those past it are not taken (their tensors
   * then fail as they read them).
   */
  #takeOwns(ids: unknown[]): (ArrayBuffer | undefined)[] {
    let left = this.#memoryBytes;
    return ids.slice(0, MAX_OWNS).map((id) => {
      const buffer = left > 0 ? this.#take(id) : undefined;
      left -= buffer?.byteLength ?? 0;
      return left >= 0 ? buffer : undefined;
    });
  }

  /** A failure the glue answered, as a failure (whatever the hook made of it), its frames in hook.ts. */
  #mapped(f: unknown): SandboxOutcome<never> {
    const o = (typeof f === 'object' && f !== null ? f : {}) as Record<string, unknown>;
    return {
      ok: false,
      input: o.input === true,
      message: typeof o.message === 'string' ? o.message : 'the hook answered something that is not a result',
      reason: typeof o.reason === 'string' ? o.reason : undefined,
      stack: typeof o.stack === 'string' ? mapStack(o.stack, this.#sourceMap) : undefined,
    };
  }

  dispose(): void {
    if (!this.#isolate.isDisposed) this.#isolate.dispose();
  }
}

export { quiesce } from './isolated-vm.js';
