// bench:ceiling's binary hook: raw little-endian FP32 (application/octet-stream), or a 224×224 JPEG
// or PNG (image/*, decoded to channels-first floats in [0, 1]); raw FP32 out.
import { binaryResponse, defineHook, transforms as T, viewAs } from '@hearth/sdk';

const SIZE = 224;
const toTensor = T.Compose([T.ToTensor()]);

export default defineHook({
  pre(request) {
    if (request.kind !== 'bytes') throw new Error('send FP32 bytes or an image');
    if (request.contentType.startsWith('image/')) {
      const x = toTensor(request.bytes);
      if (x.shape[1] !== SIZE || x.shape[2] !== SIZE) throw new Error(`send a ${SIZE}×${SIZE} image`);
      return { x: { ...x, shape: [1, 3, SIZE, SIZE] } };
    }
    const data = viewAs('FP32', request.bytes);
    return { x: { dtype: 'FP32', shape: data.length === 1024 ? [1, 1024] : [1, 3, SIZE, SIZE], data } };
  },
  post(outputs) {
    const y = outputs.y!.data as Float32Array;
    return binaryResponse(new Uint8Array(y.buffer, y.byteOffset, y.byteLength), 'application/octet-stream');
  },
});
