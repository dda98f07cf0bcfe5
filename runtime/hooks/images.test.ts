import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';

import { InvalidInputError } from '../../sdk/errors.js';
import { decodeImage } from './images.js';

describe('decodeImage', () => {
  it('decodes a PNG to the RGBA pixels it was written with', () => {
    const png = new PNG({ width: 2, height: 1 });
    png.data.set([255, 0, 0, 255, 0, 0, 255, 128]);
    const img = decodeImage(new Uint8Array(PNG.sync.write(png)));
    expect([img.width, img.height, Array.from(img.data)]).toEqual([2, 1, [255, 0, 0, 255, 0, 0, 255, 128]]);
  });

  it('refuses a PNG that declares more pixels than it decodes, before allocating them', () => {
    // A valid signature and IHDR claiming 60000 × 60000 (14.4 GB of RGBA), and nothing else.
    const header = new Uint8Array(PNG.sync.write(new PNG({ width: 1, height: 1 })).subarray(0, 33));
    new DataView(header.buffer).setUint32(16, 60_000);
    new DataView(header.buffer).setUint32(20, 60_000);
    expect(() => decodeImage(header)).toThrow(InvalidInputError);
    expect(() => decodeImage(header)).toThrow(/declares 3600000000 pixels/);
    expect(() => decodeImage(new Uint8Array([1, 2, 3]))).toThrow(/send a JPEG or PNG/);
  });
});
