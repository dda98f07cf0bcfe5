// bench:image's hook: an image upload in, torchvision's ImageNet preprocessing (the SDK's
// transforms), the top 5 out — what the Flask peer (peers/flask_image_app.py) does in Python.
import { defineHook, InvalidInputError, transforms as T } from '@hearth/sdk';

const preprocess = T.Compose([
  T.Resize(256),
  T.CenterCrop(224),
  T.ToTensor(),
  T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
]);

export default defineHook({
  pre(request) {
    if (request.kind !== 'bytes') throw new InvalidInputError('send an image');
    const x = preprocess(request.bytes);
    return { x: { ...x, shape: [1, ...x.shape] } };
  },
  post(outputs) {
    const logits = outputs.y!.data as Float32Array;
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
