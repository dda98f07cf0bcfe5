// bench:serve's ResNet-50 hook: raw FP32 bytes of 3×224×224 in (as the peers take), logits out.
import { defineHook } from '@hearth/sdk';

export default defineHook({
  pre(request) {
    if (request.kind !== 'bytes') throw new Error('send the raw FP32 image, application/octet-stream');
    const b = request.bytes;
    const data = new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
    return { x: { dtype: 'FP32', shape: [1, 3, 224, 224], data } };
  },
  post(outputs) {
    return { outputs: Array.from(outputs.y!.data as Float32Array) };
  },
});
