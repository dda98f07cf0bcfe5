// bench:serve's MLP hook: the peers' body, {"inputs": [1024 floats]}, in; {"outputs": [...]} out.
import { defineHook } from '@hearth/sdk';

export default defineHook({
  pre(request) {
    if (request.kind !== 'json') throw new Error('send {"inputs": [1024 floats]}');
    const data = Float32Array.from((request.json as { inputs: number[] }).inputs);
    return { x: { dtype: 'FP32', shape: [1, 1024], data } };
  },
  post(outputs) {
    return { outputs: Array.from(outputs.y!.data as Float32Array) };
  },
});
