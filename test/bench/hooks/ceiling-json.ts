// bench:ceiling's JSON hook, written the SDK's way: {"inputs": [floats]} in, shaped by how many
// there are (1024 for the vector model, 3×224×224 for the image one); {"outputs": [floats]} out.
import { defineHook, tensorFromJson, tensorToJson } from '@hearth/sdk';

export default defineHook({
  pre(request) {
    if (request.kind !== 'json') throw new Error('send {"inputs": [floats]}');
    const { inputs } = request.json as { inputs: number[] };
    return { x: tensorFromJson('FP32', inputs, inputs.length === 1024 ? [1, 1024] : [1, 3, 224, 224]) };
  },
  post(outputs) {
    return { outputs: tensorToJson({ ...outputs.y!, shape: [outputs.y!.data.length] }) };
  },
});
