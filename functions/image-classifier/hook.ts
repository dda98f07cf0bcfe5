// A JPEG or PNG upload in; the top-5 labels with softmax scores out. Decoding (the SDK's
// decodeImage), a bilinear resize to 224×224 and ImageNet's normalisation run in the hook's
// sandbox; the model sees [1, 3, 224, 224] FP32.
import { decodeImage, defineHook, InvalidInputError } from '@hearth/sdk';

import labels from './labels.json' with { type: 'json' };

const SIZE = 224;
const MEAN = [0.485, 0.456, 0.406];
const STD = [0.229, 0.224, 0.225];

/** Bilinear resize of RGBA to SIZE×SIZE, normalised, channels first. */
export function toTensor(img: { width: number; height: number; data: Uint8Array }): Float32Array {
  const out = new Float32Array(3 * SIZE * SIZE);
  const sx = img.width / SIZE;
  const sy = img.height / SIZE;
  for (let y = 0; y < SIZE; y++) {
    const fy = Math.min(img.height - 1, Math.max(0, (y + 0.5) * sy - 0.5));
    const y0 = Math.floor(fy);
    const y1 = Math.min(img.height - 1, y0 + 1);
    const wy = fy - y0;
    for (let x = 0; x < SIZE; x++) {
      const fx = Math.min(img.width - 1, Math.max(0, (x + 0.5) * sx - 0.5));
      const x0 = Math.floor(fx);
      const x1 = Math.min(img.width - 1, x0 + 1);
      const wx = fx - x0;
      for (let c = 0; c < 3; c++) {
        const p = (yy: number, xx: number) => img.data[(yy * img.width + xx) * 4 + c]!;
        const v = (p(y0, x0) * (1 - wx) + p(y0, x1) * wx) * (1 - wy) + (p(y1, x0) * (1 - wx) + p(y1, x1) * wx) * wy;
        out[c * SIZE * SIZE + y * SIZE + x] = (v / 255 - MEAN[c]!) / STD[c]!;
      }
    }
  }
  return out;
}

export default defineHook({
  pre(request) {
    if (request.kind !== 'bytes')
      throw new InvalidInputError('send the image bytes with content-type image/jpeg or image/png, not JSON');
    return { x: { dtype: 'FP32', shape: [1, 3, SIZE, SIZE], data: toTensor(decodeImage(request.bytes)) } };
  },
  post(outputs) {
    const logits = outputs.logits!.data as Float32Array;
    const max = Math.max(...logits);
    const exp = Array.from(logits, (l) => Math.exp(l - max));
    const sum = exp.reduce((a, b) => a + b, 0);
    const top = exp
      .map((e, i) => ({ index: i, label: (labels as string[])[i]!, score: e / sum }))
      .sort((a, b) => b.score - a.score)
      .slice(0, 5);
    return { top5: top };
  },
});
