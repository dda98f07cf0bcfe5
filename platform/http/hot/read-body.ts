/**
 * A request's body read whole off node:http, never past the body limit, and gathered so that a
 * KServe body's binary tensors are 64-byte aligned where they lie.
 */
import type { IncomingMessage } from 'node:http';

import { PayloadTooLargeError } from '../../../sdk/errors.js';
import type { BodyBuffers } from './body-buffers.js';

const ALIGN = 64;
/** The largest declared body read into one buffer made ahead of its bytes (a 224×224 FP32 image is 602 KB). */
const PREALLOCATE_BYTES = 4 * 2 ** 20;

/** The 413 of a body over the limit, on either router. */
export function tooLarge(max: number): PayloadTooLargeError {
  return new PayloadTooLargeError(`the body is over the limit of ${max} bytes (HEARTH_MAX_BODY_BYTES)`);
}

/**
 * The body, whole, or PayloadTooLargeError as soon as it is known to be over `max` bytes. With its
 * length declared it is gathered into one buffer as it arrives, placed so that byte `alignAt` of it
 * (where the binary tensors of a KServe body begin) is 64-byte aligned: tensors are then read in
 * place, not copied out to be aligned (platform/kserve/tensors.ts).
 */
export function readBody(
  req: IncomingMessage,
  max: number,
  alignAt = 0,
  buffers?: BodyBuffers,
): Promise<{ body: Uint8Array; pooled: boolean }> {
  const declared = req.headers['content-length'];
  const length = declared === undefined ? undefined : Number(declared);
  if (length !== undefined && length > max) return Promise.reject(tooLarge(max));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // Declared (the HTTP parser holds the body to it): one buffer, filled as chunks arrive. Only up
    // to PREALLOCATE_BYTES: a client that declares a large body and sends none of it must not make
    // the node hold that much for it before it arrives.
    const skew = (ALIGN - (alignAt % ALIGN)) % ALIGN;
    const whole =
      length !== undefined && Number.isSafeInteger(length) && length > 0 && length <= PREALLOCATE_BYTES
        ? new Uint8Array(buffers ? buffers.take(skew + length) : new ArrayBuffer(skew + length), skew, length)
        : undefined;
    req.on('data', (chunk: Buffer) => {
      if (whole && size + chunk.byteLength <= whole.byteLength) whole.set(chunk, size);
      else chunks.push(chunk);
      size += chunk.byteLength;
      if (size > max) {
        req.removeAllListeners('data');
        req.pause();
        reject(tooLarge(max));
      }
    });
    req.once('end', () => {
      if (whole && chunks.length === 0) resolve({ body: whole.subarray(0, size), pooled: buffers !== undefined });
      else if (whole)
        resolve({
          body: Buffer.concat([whole.subarray(0, Math.min(size, whole.byteLength)), ...chunks]),
          pooled: false,
        });
      else resolve({ body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), pooled: false });
    });
    req.once('error', reject);
  });
}
