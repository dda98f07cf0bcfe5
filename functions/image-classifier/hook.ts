// A JPEG, PNG or WebP upload in; the top-5 labels with softmax scores out. The preprocessing is
// torchvision's ImageNet recipe, written with its names and run in native code beside the hook
// (the same tensor as PIL + torchvision.transforms give); the model sees [1, 3, 224, 224] FP32.
import { defineHook, InvalidInputError, transforms as T } from '@hearth/sdk';

import labels from './labels.json' with { type: 'json' };

const preprocess = T.Compose([
  T.Resize(256),
  T.CenterCrop(224),
  T.ToTensor(),
  T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
]);

export default defineHook({
  pre(request) {
    if (request.kind !== 'bytes')
      throw new InvalidInputError(
        'send the image bytes with content-type image/jpeg, image/png or image/webp, not JSON',
      );
    const x = preprocess(request.bytes);
    return { x: { ...x, shape: [1, ...x.shape] } };
  },
  post(outputs) {
    const logits = outputs.logits!.data as Float32Array;
    let max = -Infinity;
    for (const l of logits) max = Math.max(max, l);
    const exp = Array.from(logits, (l) => Math.exp(l - max));
    const sum = exp.reduce((a, b) => a + b, 0);
    const top = exp
      .map((e, i) => ({ index: i, label: (labels as string[])[i]!, score: e / sum }))
      .sort((a, b) => b.score - a.score)
      .slice(0, 5);
    return { top5: top };
  },
});
