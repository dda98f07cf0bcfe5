// bench:serve's ResNet-50 hook: raw FP32 bytes of 3×224×224 in (as the peers take), logits out.
import { defineHook, viewAs } from '@hearth/sdk';

export default defineHook({
  pre(request) {
    if (request.kind !== 'bytes') throw new Error('send the raw FP32 image, application/octet-stream');
    const data = viewAs('FP32', request.bytes);
    return { x: { dtype: 'FP32', shape: [1, 3, 224, 224], data } };
  },
  post(outputs) {
    return { outputs: Array.from(outputs.y!.data as Float32Array) };
  },
});
