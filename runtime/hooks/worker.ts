/**
 * The hook side of a hook worker thread: loads the bundled hook once, runs setup once, then pre and
 * post tasks. Failures come back as values (HookFailure), so a throwing hook costs one request and
 * never the thread; only a hook that runs past its deadline or out of heap loses its thread, which
 * the pool replaces. Tensors and bodies go back by transfer, not by copy.
 */
import { pathToFileURL } from 'node:url';

import { Piscina } from 'piscina';

import type { Hook, HookContext, HookRequest } from '../../sdk/hook.js';
import { isBinaryResponse } from '../../sdk/hook.js';
import type { TensorsByName } from '../../sdk/tensor.js';
import { threadCpuClock, useAddonAt } from '../engine/index.js';
import { checkTensors, ownTensors } from '../tensors/index.js';
import { DefaultHookInputError, defaultHook } from './default-hook.js';
import { bodyIn, placeTensors } from './exchange.js';
import { taskClock } from './hook-cost.js';
import { imageHost, MAX_PIXELS } from './images.js';
import type {
  HookFailure,
  HookTask,
  HookWorkerData,
  PostItemResult,
  PostResult,
  PreItemResult,
  PreResult,
  RawRequest,
  SetupResult,
} from './messages.js';
import { CLOSING, HOOK_LOADING, HOOK_RUNNING, QUIESCED } from './messages.js';
import { HookSandbox, quiesce } from './sandbox.js';

// A result whose buffers move rather than copy: Piscina.move() marks it with a symbol private to
// piscina's module, so this must be the same piscina that runs the worker (it stays external).
function move<T>(value: T, buffers: ArrayBufferLike[]): T {
  const unique = [...new Set(buffers.filter((b): b is ArrayBuffer => b.byteLength > 0 && b instanceof ArrayBuffer))];
  const movable = {
    get [Piscina.transferableSymbol]() {
      return unique;
    },
    get [Piscina.valueSymbol]() {
      return value;
    },
  };
  return Piscina.move(movable as unknown as Parameters<typeof Piscina.move>[0]) as unknown as T;
}

const JSON_TYPE = /^application\/(.+\+)?json\b|^text\/json\b/i;
const decoder = new TextDecoder();
const encoder = new TextEncoder();

class InputError extends Error {}

/** The body as the hook sees it; JSON is parsed on first use. */
function hookRequest(raw: RawRequest): HookRequest {
  if (!JSON_TYPE.test(raw.contentType)) return { kind: 'bytes', bytes: raw.body, contentType: raw.contentType };
  let parsed: { value: unknown } | undefined;
  return {
    kind: 'json',
    contentType: raw.contentType,
    get json(): unknown {
      if (parsed === undefined) {
        try {
          parsed = { value: JSON.parse(decoder.decode(raw.body)) };
        } catch (error) {
          throw new InputError(`the body is not valid JSON: ${(error as Error).message}`);
        }
      }
      return parsed.value;
    },
  } as HookRequest;
}

function failure(phase: HookFailure['phase'], error: unknown): HookFailure {
  const input =
    error instanceof InputError ||
    error instanceof DefaultHookInputError ||
    (error as { code?: string })?.code === 'INVALID_INPUT';
  return {
    ok: false,
    phase,
    kind: input ? 'input' : 'hook',
    message: error instanceof Error ? error.message : String(error),
    reason: (error as { reason?: string })?.reason,
  };
}

function tensorBuffers(tensors: TensorsByName): ArrayBufferLike[] {
  return Object.values(tensors).map((t) => t.data.buffer);
}

type PreOutcome = { ok: true; tensors: TensorsByName } | HookFailure;
type PostOutcome = { ok: true; body: Uint8Array; contentType: string } | HookFailure;

/** A loaded hook: pre and post for many requests at once, with failures as values. */
interface LoadedHook {
  /** Lets go of what the hook holds (its isolate). */
  dispose?(): Promise<void>;
  /** The function's own hook (its tensors that do not fit the spec are its fault), not the default. */
  own: boolean;
  pre(raws: readonly RawRequest[]): Promise<PreOutcome[]>;
  post(items: readonly { outputs: TensorsByName; request: RawRequest }[]): Promise<PostOutcome[]>;
}

/** The hook imported into this thread: the default hook, or a user hook under isolation none. */
async function loadDirect(data: HookWorkerData): Promise<LoadedHook> {
  // SDK helpers that need the host (the image functions) find it here, as they do in a sandbox.
  (globalThis as { __hearth?: object }).__hearth = imageHost({
    maxPixels: MAX_PIXELS,
    maxBytes: (data.memoryMb ?? 256) * 2 ** 20,
  });
  const hook = data.bundlePath
    ? ((await import(pathToFileURL(data.bundlePath).href)) as { default?: Hook }).default
    : defaultHook(data.maxResponseBytes ?? 64 * 2 ** 20);
  if (!hook || typeof hook.pre !== 'function' || typeof hook.post !== 'function') {
    throw new Error('the hook module must `export default defineHook({ pre, post })`');
  }
  const base = contextBase(data);
  const context: HookContext = { ...base, state: hook.setup ? await hook.setup(base) : undefined };
  const pre = async (raw: RawRequest): Promise<PreOutcome> => {
    try {
      // A hook that throws InvalidInputError says the request was bad (400).
      return { ok: true, tensors: await hook.pre(hookRequest(raw), context) };
    } catch (error) {
      return failure('pre', error);
    }
  };
  const post = async (outputs: TensorsByName, raw: RawRequest): Promise<PostOutcome> => {
    try {
      const response = await hook.post(outputs, hookRequest(raw), context);
      if (isBinaryResponse(response)) return { ok: true, body: response.bytes, contentType: response.contentType };
      const text = JSON.stringify(response);
      if (text === undefined) throw new Error('post returned nothing JSON can hold');
      return { ok: true, body: encoder.encode(text), contentType: 'application/json' };
    } catch (error) {
      return failure('post', error);
    }
  };
  return {
    own: Boolean(data.bundlePath),
    async pre(raws) {
      const out: PreOutcome[] = [];
      for (const raw of raws) out.push(await pre(raw));
      return out;
    },
    async post(items) {
      const out: PostOutcome[] = [];
      for (const item of items) out.push(await post(item.outputs, item.request));
      return out;
    },
  };
}

const contextBase = (data: HookWorkerData) => ({
  function: data.function,
  version: data.version,
  inputs: data.inputs,
  outputs: data.outputs,
  maxBatchSize: data.maxBatchSize,
  secrets: Object.freeze({ ...data.secrets }),
});

/**
 * The function's hook in a V8 isolate (runtime/hooks/sandbox.ts). An isolate that ran out of
 * memory is gone: the request fails, and the next one loads the hook into a new isolate (running
 * setup again).
 */
function loadSandboxed(data: HookWorkerData): () => Promise<LoadedHook> {
  let sandbox: Promise<HookSandbox> | undefined;
  const live = async (): Promise<HookSandbox> => {
    const current = sandbox && (await sandbox.catch(() => undefined));
    if (current?.alive) return current;
    sandbox = (async () => {
      const created = await HookSandbox.create({
        bundlePath: data.bundlePath!,
        memoryMb: data.memoryMb ?? 256,
        timeoutMs: data.timeoutMs ?? 10_000,
        maxResponseBytes: data.maxResponseBytes ?? 64 * 2 ** 20,
        webAssembly: data.webAssembly ?? false,
        log: (level, text) => hookLog(data, level, text),
        retryElsewhere: data.retryElsewhere,
      });
      const setup = await created.setup(contextBase(data));
      if (!setup.ok) {
        created.dispose();
        throw Object.assign(new Error(setup.message), { reason: setup.reason });
      }
      return created;
    })();
    return sandbox;
  };
  const asFailure = (
    phase: HookFailure['phase'],
    f: { message: string; input: boolean; reason?: string; stack?: string; lost?: boolean },
  ): HookFailure => ({
    ok: false,
    phase,
    kind: f.input ? 'input' : 'hook',
    message: f.message,
    reason: f.reason,
    ...(f.stack ? { stack: f.stack } : {}),
    ...(f.lost && data.retryElsewhere ? { again: true as const } : {}),
  });
  // A request lost with others runs again alone: here on a new isolate, or elsewhere (retryElsewhere).
  const rerunLost = data.retryElsewhere
    ? <I, R>(items: readonly I[], run: (group: readonly I[]) => Promise<R[]>) => run(items)
    : alone;
  return async () => {
    await live();
    return {
      own: true,
      async dispose() {
        (await sandbox?.catch(() => undefined))?.dispose();
      },
      async pre(raws) {
        const rs = await rerunLost(raws, async (group) => (await live()).preMany(group));
        return rs.map((r) => (r.ok ? { ok: true, tensors: r.tensors } : asFailure('pre', r)));
      },
      async post(items) {
        const rs = await rerunLost(items, async (group) => (await live()).postMany(group));
        return rs.map((r) => (r.ok ? { ok: true, body: r.bytes, contentType: r.contentType } : asFailure('post', r)));
      },
    };
  };
}

/**
 * `run` on a group; a request lost with others when their crossing took the isolate down (out of
 * memory) runs again alone, each on a new isolate, so only the one that overflows fails.
 */
async function alone<I, R extends { ok: boolean; lost?: boolean }>(
  items: readonly I[],
  run: (group: readonly I[]) => Promise<R[]>,
): Promise<R[]> {
  const rs = await run(items);
  for (const [i, r] of rs.entries()) if (!r.ok && r.lost) rs[i] = (await run([items[i]!]))[0]!;
  return rs;
}

/** A token of RFC 9110 (a media type's type, subtype, parameter name or plain value). */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
/** `type/subtype` with parameters, printable ASCII only: what a Content-Type header may carry. */
const MEDIA_TYPE = new RegExp(
  `^${TOKEN}/${TOKEN}([ \\t]*;[ \\t]*${TOKEN}=(${TOKEN}|"[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]*"))*$`,
);

/**
 * A response post made, checked before it leaves the hook: its content type must be a media type
 * a header can carry (a newline or a NUL in it would end the node's response writer), and it must
 * fit limits.maxResponseMb.
 */
function checkResponse(result: PostItemResult, maxBytes = 64 * 2 ** 20): PostItemResult {
  if (!result.ok) return result;
  const type = result.contentType;
  if (typeof type !== 'string' || type.length > 256 || !MEDIA_TYPE.test(type))
    return failure(
      'post',
      new Error(
        `post returned a content type that is not a media type ("type/subtype", printable ASCII, at most 256 characters): ${JSON.stringify(String(type).slice(0, 80))}`,
      ),
    );
  if (!(result.body instanceof Uint8Array))
    return failure('post', new Error('post returned a binary response whose bytes are not a Uint8Array'));
  if (result.body.byteLength > maxBytes)
    return failure(
      'post',
      new Error(`post returned ${result.body.byteLength} bytes, over its limit of ${maxBytes} (limits.maxResponseMb)`),
    );
  // Bytes on a SharedArrayBuffer cannot be moved to the pool, and the hook could still write them: copied.
  if (!(result.body.buffer instanceof ArrayBuffer)) return { ...result, body: new Uint8Array(result.body) };
  return result;
}

/** A sandboxed hook's console: one line on the runner's stderr, which the node logs under the function's name. */
function hookLog(data: HookWorkerData, level: string, text: string): void {
  process.stderr.write(`${JSON.stringify({ hook: data.hookName, level, msg: text.slice(0, 8192) })}\n`);
}

/** Tells the pool how far this thread got with a task (messages.ts HookTask.progress). */
function report(progress: Int32Array | undefined, stage: number): void {
  if (progress === undefined) return;
  Atomics.store(progress, 0, stage);
  Atomics.notify(progress, 0);
}

/** What a task gives back: its result, and the buffers the result holds (a thread transfers them back). */
export interface TaskOutcome {
  value: unknown;
  buffers: ArrayBufferLike[];
}

/** Runs hook tasks; `dispose` lets go of the hook (its isolate), after which a task loads it again. */
export type HookRunner = ((task: HookTask) => Promise<TaskOutcome>) & { dispose(): Promise<void> };

/**
 * Runs hook tasks against the hook, loaded on first use on the calling thread: a hook worker's (see
 * createHookWorker), or a runner's own (HookPoolOptions.inline).
 */
export function createHookRunner(data: HookWorkerData): HookRunner {
  // What the hook's code costs this thread (the pool sends cheap hooks to no thread: hook-cost.ts).
  const cpuUs = threadCpuClock();
  let ready: Promise<LoadedHook> | undefined;
  const load = data.bundlePath && data.sandbox ? loadSandboxed(data) : () => loadDirect(data);
  const init = (): Promise<LoadedHook> => {
    ready ??= load();
    return ready;
  };

  const dispose = async (): Promise<void> => {
    const hook = ready && (await ready.catch(() => undefined));
    ready = undefined;
    await hook?.dispose?.();
  };
  const run = async (task: HookTask): Promise<TaskOutcome> => {
    let hook: LoadedHook;
    report(task.progress, HOOK_LOADING);
    try {
      hook = await init();
    } catch (error) {
      ready = undefined;
      return { value: failure('setup', error), buffers: [] };
    }
    report(task.progress, HOOK_RUNNING);
    switch (task.op) {
      case 'setup':
        return { value: { ok: true } satisfies SetupResult, buffers: [] };
      case 'pre': {
        const { exchange } = data; // a body in the pool's exchange is read where it lies (exchange.ts)
        const requests = task.requests.map((r) =>
          exchange && r.slot && r.slot.body >= 0 ? { ...r, body: bodyIn(exchange, r.slot) } : r,
        );
        const elapsed = taskClock(requests.length, cpuUs);
        const results = await hook.pre(requests);
        const us = elapsed();
        const buffers: ArrayBufferLike[] = task.requests.map((r) => r.body.buffer);
        const items = results.map((result, i): PreItemResult => {
          if (!result.ok) return result;
          const checked = checkedTensors(result.tensors, data, hook.own);
          if (!checked.ok) return checked;
          const { slot, body } = task.requests[i]!; // large tensors go back in its slot (exchange.ts)
          const { tensors, placed } =
            exchange && slot
              ? placeTensors(exchange, slot, checked.tensors, requests.length === 1)
              : { tensors: checked.tensors, placed: undefined };
          buffers.push(...tensorBuffers(tensors));
          return { ok: true, tensors, body, placed };
        });
        return { value: { ok: true, items, us } satisfies PreResult, buffers };
      }
      case 'post': {
        const elapsed = taskClock(task.items.length, cpuUs);
        const results = await hook.post(task.items);
        const us = elapsed();
        const items = results.map((r) => checkResponse(r, data.maxResponseBytes));
        const buffers = items.flatMap((r) => (r.ok ? [r.body.buffer] : []));
        return { value: { ok: true, items, us } satisfies PostResult, buffers };
      }
    }
  };
  return Object.assign(run, { dispose });
}

/** pre's tensors, checked against the spec's inputs and made the runner's own. */
function checkedTensors(tensors: TensorsByName, data: HookWorkerData, own: boolean): PreOutcome {
  try {
    if (typeof tensors !== 'object' || tensors === null)
      throw new Error('pre must return an object of tensors by input name');
    checkTensors(tensors, data.inputs, data.maxBatchSize);
    ownTensors(tensors);
    return { ok: true, tensors };
  } catch (error) {
    const f = failure('pre', error);
    // Tensors a function's own hook built that do not fit the spec are its fault, not the caller's.
    if (own) f.kind = 'hook';
    return f;
  }
}

/** A hook worker thread's task function (piscina's): results go back with their buffers moved, not copied. */
export function createHookWorker(data: HookWorkerData): (task: HookTask) => Promise<unknown> {
  if (data.addonPath) useAddonAt(data.addonPath);
  const run = createHookRunner(data);
  if (data.closeChannel) {
    // Asked before the pool ends this thread: its isolate disposed, and the thread quiesced.
    const channel = new BroadcastChannel(data.closeChannel);
    channel.unref();
    channel.onmessage = (event) => {
      if ((event as MessageEvent).data !== CLOSING) return;
      void run.dispose().finally(() => {
        quiesce();
        channel.postMessage(QUIESCED);
      });
    };
  }
  return async (task) => {
    const { value, buffers } = await run(task);
    return buffers.length > 0 ? move(value, buffers) : value;
  };
}
