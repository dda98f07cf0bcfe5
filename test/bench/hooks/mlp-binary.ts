// bench:pool's hook: raw little-endian FP32 rows in, raw FP32 rows out, in hook threads.
import { binaryResponse, defineHook, viewAs } from '@hearth/sdk';

export default defineHook({
  pre(request) {
    if (request.kind !== 'bytes') throw new Error('send application/octet-stream FP32 rows');
    const data = viewAs('FP32', request.bytes);
    return { x: { dtype: 'FP32', shape: [data.length / 1024, 1024], data } };
  },
  post(outputs) {
    const y = outputs.y!.data as Float32Array;
    return binaryResponse(new Uint8Array(y.buffer, y.byteOffset, y.byteLength), 'application/octet-stream');
  },
});
