/**
 * Image decoding for hooks (`decodeImage` of @hearth/sdk): JPEG (jpeg-js) and PNG (pngjs) to RGBA,
 * run by the hook thread outside the hook's sandbox, since the sandbox has no Node modules (PNG
 * needs zlib). Both decoders are pure JavaScript; a JPEG may take at most 256 MB to decode.
 */
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';

import { InvalidInputError } from '../../sdk/errors.js';
import type { DecodedImage } from '../../sdk/image.js';

/**
 * The most pixels an image may declare: its RGBA buffer (4 bytes a pixel) is allocated by this
 * thread, outside the hook's memory cap, from dimensions the caller's bytes state.
 */
const MAX_PIXELS = 40_000_000;

/** RGBA pixels of a JPEG or PNG, by its magic bytes. */
export function decodeImage(bytes: Uint8Array): DecodedImage {
  try {
    if (bytes[0] === 0xff && bytes[1] === 0xd8) {
      const img = jpeg.decode(bytes, { useTArray: true, maxMemoryUsageInMB: 256, maxResolutionInMP: MAX_PIXELS / 1e6 });
      return { width: img.width, height: img.height, data: img.data };
    }
    if (bytes[0] === 0x89 && bytes[1] === 0x50) {
      // IHDR is the first chunk: width and height, big-endian, at bytes 16 and 20.
      if (bytes.length < 24) throw new Error('the PNG ends before its header');
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      const pixels = view.getUint32(16) * view.getUint32(20);
      if (pixels > MAX_PIXELS)
        throw new Error(`the PNG declares ${pixels} pixels, more than ${MAX_PIXELS} are decoded`);
      const png = PNG.sync.read(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
      return {
        width: png.width,
        height: png.height,
        data: new Uint8Array(png.data.buffer, png.data.byteOffset, png.data.byteLength),
      };
    }
  } catch (error) {
    throw new InvalidInputError(`the image does not decode: ${(error as Error).message}`);
  }
  throw new InvalidInputError('send a JPEG or PNG image as the body (content-type image/jpeg or image/png)');
}
