/**
 * The hook side of a hook worker thread: loads the bundled hook once, runs setup once, then pre and
 * post tasks. Failures come back as values (HookFailure), so a throwing hook costs one request and
 * never the thread; only a hook that runs past its deadline or out of heap loses its thread, which
 * the pool replaces. Tensors and bodies go back by transfer, not by copy.
 */
import { pathToFileURL } from 'node:url';

import { Piscina } from 'piscina';

import type { Hook, HookContext, HookRequest, HookTensors } from '../../sdk/hook.js';
import { isBinaryResponse } from '../../sdk/hook.js';
import { checkTensors } from '../tensors/validate.js';
import { defaultHook, DefaultHookInputError } from './default-hook.js';
import type { HookFailure, HookTask, HookWorkerData, PostItemResult, PostResult, PreItemResult, PreResult, RawRequest, SetupResult } from './messages.js';

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
  const input = error instanceof InputError || error instanceof DefaultHookInputError || (error as { code?: string })?.code === 'INVALID_INPUT';
  return {
    ok: false,
    phase,
    kind: input ? 'input' : 'hook',
    message: error instanceof Error ? error.message : String(error),
    reason: (error as { reason?: string })?.reason,
  };
}

function tensorBuffers(tensors: HookTensors): ArrayBufferLike[] {
  return Object.values(tensors).map((t) => t.data.buffer);
}

export function createHookWorker(data: HookWorkerData): (task: HookTask) => Promise<unknown> {
  let ready: Promise<{ hook: Hook; context: HookContext }> | undefined;
  const init = (): Promise<{ hook: Hook; context: HookContext }> =>
    (ready ??= (async () => {
      const hook = data.bundlePath ? ((await import(pathToFileURL(data.bundlePath).href)) as { default?: Hook }).default : defaultHook;
      if (!hook || typeof hook.pre !== 'function' || typeof hook.post !== 'function') {
        throw new Error('the hook module must `export default defineHook({ pre, post })`');
      }
      const base = { function: data.function, version: data.version, inputs: data.inputs, outputs: data.outputs, maxBatchSize: data.maxBatchSize };
      const state = hook.setup ? await hook.setup(base) : undefined;
      return { hook, context: { ...base, state } };
    })());

  return async (task: HookTask): Promise<unknown> => {
    let loaded;
    try {
      loaded = await init();
    } catch (error) {
      return failure('setup', error);
    }
    const { hook, context } = loaded;
    switch (task.op) {
      case 'setup':
        return { ok: true } satisfies SetupResult;
      case 'pre': {
        const items: PreItemResult[] = [];
        const buffers: ArrayBufferLike[] = [];
        for (const request of task.requests) {
          buffers.push(request.body.buffer);
          let tensors: HookTensors;
          try {
            // A hook that throws InvalidInputError says the request was bad (400).
            tensors = await hook.pre(hookRequest(request), context);
          } catch (error) {
            items.push(failure('pre', error));
            continue;
          }
          try {
            if (typeof tensors !== 'object' || tensors === null) throw new Error('pre must return an object of tensors by input name');
            checkTensors(tensors, data.inputs, data.maxBatchSize);
          } catch (error) {
            const f = failure('pre', error);
            // Tensors a function's own hook built that do not fit the spec are its fault, not the caller's.
            if (hook !== defaultHook) f.kind = 'hook';
            items.push(f);
            continue;
          }
          items.push({ ok: true, tensors, body: request.body });
          buffers.push(...tensorBuffers(tensors));
        }
        return move({ ok: true, items } satisfies PreResult, buffers);
      }
      case 'post': {
        const items: PostItemResult[] = [];
        const buffers: ArrayBufferLike[] = [];
        for (const item of task.items) {
          try {
            const response = await hook.post(item.outputs, hookRequest(item.request), context);
            if (isBinaryResponse(response)) {
              items.push({ ok: true, body: response.bytes, contentType: response.contentType });
              buffers.push(response.bytes.buffer);
            } else {
              const text = JSON.stringify(response);
              if (text === undefined) throw new Error('post returned nothing JSON can hold');
              const body = encoder.encode(text);
              items.push({ ok: true, body, contentType: 'application/json' });
              buffers.push(body.buffer);
            }
          } catch (error) {
            items.push(failure('post', error));
          }
        }
        return move({ ok: true, items } satisfies PostResult, buffers);
      }
    }
  };
}
