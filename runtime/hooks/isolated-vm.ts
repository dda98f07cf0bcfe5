/**
 * isolated-vm on this thread: loaded once a sandbox is made here, values moved into its isolates,
 * and the quiescing a thread that loaded it needs before it ends.
 */
import { getHeapSnapshot } from 'node:v8';

import type ivm from 'isolated-vm';

import { InvalidInputError } from '../../sdk/errors.js';
import { ownsWholeBuffer } from '../tensors/index.js';
import type { ImageHost } from './images.js';

/** Bytes in a buffer of their own, moved into an isolate (the argument that carries them), not copied. */
export function moveIn(bytes: Uint8Array): unknown {
  return new lib!.ExternalCopy(bytes.buffer, { transferOut: true }).copyInto({ release: true, transferIn: true });
}

/**
 * The ArrayBuffer an image function's result holds its bytes in, when the result owns all of it
 * (the addon's buffers do): moved into the isolate, where it counts against the hook's memory.
 */
export function movableBuffers(value: unknown): ArrayBuffer[] {
  const data = ArrayBuffer.isView(value) ? value : (value as { data?: unknown } | null)?.data;
  return ArrayBuffer.isView(data) && ownsWholeBuffer(data) ? [data.buffer] : [];
}

/**
 * The isolate's way to the image functions (`$image`): each answer is an ExternalCopy, so that the
 * pixels or tensor the addon made move into the isolate rather than being copied (a 224×224 FP32
 * tensor crossed as a serialized copy, then a zero-filled copy of that); a failure crosses as a value.
 */
export function imageCalls(ivm: typeof import('isolated-vm'), images: ImageHost) {
  return (name: string, ...args: unknown[]): unknown => {
    try {
      if (!Object.hasOwn(images, name)) throw new Error(`no image function ${name}`);
      const value = (images[name as keyof ImageHost] as (...a: unknown[]) => unknown)(...args);
      return new ivm.ExternalCopy({ ok: true, value }, { transferList: movableBuffers(value) });
    } catch (error) {
      const input = error instanceof InvalidInputError;
      return new ivm.ExternalCopy({ ok: false, message: (error as Error).message, input });
    }
  };
}

/** The parts of a URL the isolate's `URL` shows (the prelude's `$url`): plain strings, copied in. */
export function urlParts(input: string, base?: string): Record<string, string> {
  const u = new globalThis.URL(input, base);
  const { href, origin, protocol, username, password, host, hostname, port, pathname, search, hash } = u;
  return { href, origin, protocol, username, password, host, hostname, port, pathname, search, hash };
}

/** `work`, or a timeout failure once `ms` have passed without it settling. */
export async function settled<T>(work: Promise<T>, ms: number): Promise<T> {
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

/** isolated-vm, once this thread has loaded it (it has made a sandbox). */
export let lib: typeof ivm | undefined;

export async function isolatedVm(): Promise<typeof ivm> {
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
