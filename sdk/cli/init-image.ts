/**
 * `hearth init --template image`: an image classifier — torchvision's ResNet-18 (random weights,
 * made by export.py with python3-torchvision), and a hook that preprocesses an upload with the
 * SDK's transforms (torchvision's ImageNet recipe, run in native code) and answers the top 5.
 */
const yaml = (
  name: string,
) => `# ${name}: an image classifier. Reference: docs/functions-and-hooks.md (the function spec).
name: ${name}
model: model.pt          # TorchScript ResNet-18, made by export.py
hook: hook.ts            # image bytes in, [1, 3, 224, 224] to the model, the top 5 back
maxBatchSize: 16         # concurrent uploads are batched into one forward
batching:
  maxQueueDelayUs: 5000
instances:
  device: auto           # CUDA when the node has it, else CPU
scaling:
  minInstances: 0
  maxInstances: 4
  targetQueueDepth: 8
  scaleDownAfterS: 300
inputs:
  - { name: x, dtype: FP32, dims: [3, 224, 224] }
outputs:
  - { name: logits, dtype: FP32, dims: [1000] }
`;

const HOOK = `// An image upload (JPEG, PNG or WebP) in; the five most likely classes with their scores out.
import { defineHook, InvalidInputError, transforms as T } from '@hearth/sdk';

// torchvision's ImageNet preprocessing, by the names a PyTorch user knows. It runs in native code
// beside the hook, and gives the tensor that PIL + torchvision.transforms give in Python.
const preprocess = T.Compose([
  T.Resize(256),
  T.CenterCrop(224),
  T.ToTensor(),
  T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
]);

export default defineHook({
  pre(request) {
    if (request.kind !== 'bytes')
      throw new InvalidInputError('send an image: content-type image/jpeg, image/png or image/webp');
    // A body that is no image, or too large a one, is the caller's error (400) with the reason.
    const x = preprocess(request.bytes); // FP32 [3, 224, 224]
    return { x: { ...x, shape: [1, ...x.shape] } };
  },
  post(outputs) {
    const logits = outputs.logits!.data as Float32Array;
    let max = -Infinity;
    for (const l of logits) max = Math.max(max, l);
    const exp = Array.from(logits, (l) => Math.exp(l - max));
    const sum = exp.reduce((a, b) => a + b, 0);
    const top5 = exp
      .map((e, index) => ({ index, score: e / sum }))
      .sort((a, b) => b.score - a.score)
      .slice(0, 5);
    return { top5 };
  },
});
`;

const EXPORT = `"""Makes model.pt: torchvision's ResNet-18 as TorchScript, with random weights (nothing is
downloaded). For real answers, load trained ones: resnet18(weights=ResNet18_Weights.DEFAULT)."""
import torch
import torchvision

if __name__ == "__main__":
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=1000).eval()
    torch.jit.script(model).save("model.pt")
    print("wrote model.pt")
`;

const README = (name: string) => `# ${name}

\`\`\`sh
python3 export.py                 # makes model.pt (needs python3-torch and python3-torchvision)
hearth deploy .
hearth invoke ${name} --file photo.jpg --content-type image/jpeg
curl -s localhost:8000/fn/${name} -H 'content-type: image/jpeg' --data-binary @photo.jpg
# {"top5":[{"index":281,"score":0.61}, ...]}
\`\`\`

hook.ts preprocesses each upload with the SDK's \`transforms\` — \`Resize\`, \`CenterCrop\`,
\`ToTensor\`, \`Normalize\`, as in torchvision — which run in native code (libjpeg-turbo, libpng,
libwebp and Pillow's resampling) and give the same tensor as PIL + torchvision.transforms in Python.
Change the recipe there to your model's, and the model in export.py to yours.
`;

export const IMAGE_TEMPLATE = {
  files: (name: string): [file: string, text: string][] => [
    ['hearth.yaml', yaml(name)],
    ['hook.ts', HOOK],
    ['export.py', EXPORT],
    ['README.md', README(name)],
  ],
};
