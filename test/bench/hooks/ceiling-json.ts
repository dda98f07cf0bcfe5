// bench:ceiling's JSON hook: {"inputs": [floats]} in, shaped by how many there are (1024 for the
// vector model, 3×224×224 for the image one); {"outputs": [floats]} out.
import { defineHook } from '@hearth/sdk';

export default defineHook({
  pre(request) {
    if (request.kind !== 'json') throw new Error('send {"inputs": [floats]}');
    const data = Float32Array.from((request.json as { inputs: number[] }).inputs);
    return { x: { dtype: 'FP32', shape: data.length === 1024 ? [1, 1024] : [1, 3, 224, 224], data } };
  },
  post(outputs) {
    return { outputs: Array.from(outputs.y!.data as Float32Array) };
  },
});
