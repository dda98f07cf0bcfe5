// bench:ceiling's binary hook: raw little-endian FP32 (application/octet-stream), or a 224×224 JPEG
// or PNG (image/*, decoded to channels-first floats in [0, 1]); raw FP32 out.
import { binaryResponse, decodeImage, defineHook } from '@hearth/sdk';

const SIZE = 224;

export default defineHook({
  pre(request) {
    if (request.kind !== 'bytes') throw new Error('send FP32 bytes or an image');
    if (request.contentType.startsWith('image/')) {
      const img = decodeImage(request.bytes);
      if (img.width !== SIZE || img.height !== SIZE) throw new Error(`send a ${SIZE}×${SIZE} image`);
      const data = new Float32Array(3 * SIZE * SIZE);
      for (let i = 0; i < SIZE * SIZE; i++)
        for (let c = 0; c < 3; c++) data[c * SIZE * SIZE + i] = img.data[i * 4 + c]! / 255;
      return { x: { dtype: 'FP32', shape: [1, 3, SIZE, SIZE], data } };
    }
    const b = request.bytes;
    const data = new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
    return { x: { dtype: 'FP32', shape: data.length === 1024 ? [1, 1024] : [1, 3, SIZE, SIZE], data } };
  },
  post(outputs) {
    const y = outputs.y!.data as Float32Array;
    return binaryResponse(new Uint8Array(y.buffer, y.byteOffset, y.byteLength), 'application/octet-stream');
  },
});
