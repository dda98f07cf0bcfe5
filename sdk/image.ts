/**
 * Image decoding for hooks: the hook's sandbox has no Node modules, so JPEG and PNG are decoded by
 * the hook thread that hosts it (runtime/hooks/images.ts) and handed back as RGBA pixels.
 *
 * @example
 * const { width, height, data } = decodeImage(request.bytes);
 */
import { InvalidInputError } from './errors.js';

export interface DecodedImage {
  width: number;
  height: number;
  /** RGBA, 4 bytes per pixel, rows top to bottom. */
  data: Uint8Array;
}

interface HookHost {
  decodeImage?(bytes: Uint8Array): DecodedImage;
}

/** RGBA pixels of a JPEG or PNG; a body that is neither, or does not decode, is the caller's error (400). */
export function decodeImage(bytes: Uint8Array): DecodedImage {
  const host = (globalThis as { __hearth?: HookHost }).__hearth;
  if (!host?.decodeImage) throw new Error('decodeImage works inside a Hearth hook');
  try {
    return host.decodeImage(bytes);
  } catch (error) {
    throw new InvalidInputError((error as Error).message.replace(/^InvalidInputError: /, ''));
  }
}
