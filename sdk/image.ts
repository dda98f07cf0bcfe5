/**
 * Images in hooks, with torchvision's names and torchvision's answers. The work runs in native code
 * beside the hook (libjpeg-turbo, libpng, libwebp, and Pillow's resampling), never in the hook's
 * sandbox; the hook only says what to do:
 *
 * @example
 * import { defineHook, transforms as T } from '@hearth/sdk';
 *
 * const preprocess = T.Compose([
 *   T.Resize(256),
 *   T.CenterCrop(224),
 *   T.ToTensor(),
 *   T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
 * ]);
 *
 * export default defineHook({
 *   pre: (request) => {
 *     const x = preprocess(request.bytes); // FP32 [3, 224, 224]
 *     return { x: { ...x, shape: [1, ...x.shape] } };
 *   },
 *   post: (outputs) => ({ top: argmax(outputs.logits) }),
 * });
 *
 * The same JPEG, PNG or WebP through `Image.open(f).convert('RGB')` and the same torchvision
 * transforms in Python gives the same tensor, byte for byte before ToTensor. Images are held to
 * 40 megapixels and to the hook's memory limit (limits.hookMemoryMb), from what their headers
 * declare, before a pixel is decoded; past either, or for bytes that are no image, the request is
 * the caller's error (400).
 */
import { InvalidInputError } from './errors.js';
import type { Tensor } from './tensor.js';

/** Pixels: rows top to bottom, channels interleaved (1: L, 3: RGB, 4: RGBA), as numpy.asarray(pil_image). */
export interface Image {
  width: number;
  height: number;
  channels: 1 | 3 | 4;
  data: Uint8Array;
}

/** decodeImage's answer: RGBA, 4 bytes a pixel (alpha 255 where the image has none). */
export interface DecodedImage {
  width: number;
  height: number;
  data: Uint8Array;
}

export type Interpolation = 'bilinear' | 'bicubic' | 'nearest';

/** A transform step, as data: what the host runs. */
export type ImageStep =
  | {
      op: 'resize';
      size: number | readonly number[];
      interpolation?: Interpolation;
      maxSize?: number;
      antialias?: boolean;
    }
  | { op: 'centerCrop'; size: number | readonly number[] }
  | { op: 'grayscale'; channels?: 1 | 3 }
  | { op: 'toTensor'; layout?: 'CHW' | 'HWC' }
  | { op: 'pilToTensor'; layout?: 'CHW' | 'HWC' }
  | { op: 'normalize'; mean: readonly number[]; std: readonly number[] };

type ImageOut<S> = S extends { op: 'toTensor' | 'normalize' }
  ? Tensor<'FP32'>
  : S extends { op: 'pilToTensor' }
    ? Tensor<'UINT8'>
    : Image;

/** What a composed transform gives: a tensor when it ends in ToTensor/PILToTensor (and Normalize), else pixels. */
export type TransformOutput<S extends readonly ImageStep[]> = S extends readonly [...unknown[], infer L]
  ? ImageOut<L>
  : Image;

interface HookHost {
  decodeImage?(bytes: Uint8Array): DecodedImage;
  readImage?(bytes: Uint8Array, mode: string): Image;
  transform?(input: Uint8Array | Image, steps: readonly ImageStep[]): Tensor | Image;
  encodeImage?(image: Image, format: string, quality?: number): Uint8Array;
}

function host<K extends keyof HookHost>(name: K): NonNullable<HookHost[K]> {
  const h = (globalThis as { __hearth?: HookHost }).__hearth;
  const f = h?.[name];
  if (!f) throw new Error(`${name} works inside a Hearth hook`);
  return f as NonNullable<HookHost[K]>;
}

/** The host's refusals (a bad image, a step past a limit) keep their meaning: the caller's error. */
function call<T>(body: () => T): T {
  try {
    return body();
  } catch (error) {
    // In a sandbox the host's refusal arrives as an Error with the code (sandbox-source.ts).
    if ((error as { code?: string }).code === 'INVALID_INPUT' && !(error instanceof InvalidInputError))
      throw new InvalidInputError((error as Error).message);
    throw error;
  }
}

/** RGBA pixels of a JPEG, PNG or WebP (kept from the first SDK; readImage gives RGB or L). */
export function decodeImage(bytes: Uint8Array): DecodedImage {
  return call(() => host('decodeImage')(bytes));
}

/** `Image.open(f).convert(mode)`: the pixels of a JPEG, PNG or WebP as RGB (default), L or RGBA. */
export function readImage(bytes: Uint8Array, mode: 'RGB' | 'L' | 'RGBA' = 'RGB'): Image {
  return call(() => host('readImage')(bytes, mode));
}

/**
 * PNG (lossless) or JPEG (quality 1-100, default 75 as Pillow's) bytes of an image, or of a model's
 * output tensor as torchvision's ToPILImage reads it: UINT8, or FP32 in [0, 1] (scaled by 255 and
 * truncated; values outside are clamped), shaped [C, H, W], [1, C, H, W] or [H, W] (C = 1, 3 or 4).
 */
export function encodeImage(image: Image | Tensor, format: 'png' | 'jpeg' = 'png', quality?: number): Uint8Array {
  return call(() => host('encodeImage')('dtype' in image ? tensorToImage(image) : image, format, quality));
}

/** The pixels of a CHW tensor (see encodeImage), computed here, in the hook: keep it to outputs. */
export function tensorToImage(t: Tensor): Image {
  const shape = t.shape.length === 4 && t.shape[0] === 1 ? t.shape.slice(1) : t.shape;
  const [c, h, w] = shape.length === 2 ? [1, shape[0]!, shape[1]!] : (shape as [number, number, number]);
  if (shape.length > 3 || (c !== 1 && c !== 3 && c !== 4))
    throw new InvalidInputError(`an image tensor is [C, H, W] with C 1, 3 or 4, not [${t.shape.join(', ')}]`);
  if (t.dtype !== 'UINT8' && t.dtype !== 'FP32') throw new InvalidInputError('an image tensor is UINT8 or FP32');
  const src = t.data as Uint8Array | Float32Array;
  const n = h * w;
  if (src.length !== n * c)
    throw new InvalidInputError('the tensor holds a different number of elements than its shape');
  const data = new Uint8Array(n * c);
  const float = t.dtype === 'FP32';
  for (let ch = 0; ch < c; ch++) {
    for (let i = 0; i < n; i++) {
      const v = src[ch * n + i]!;
      data[i * c + ch] = float ? Math.trunc(Math.min(255, Math.max(0, v * 255))) : v;
    }
  }
  return { width: w, height: h, channels: c as 1 | 3 | 4, data };
}

/**
 * torchvision.transforms' preprocessing vocabulary. Each step is data; `Compose` runs them all in
 * one native call on a JPEG/PNG/WebP's bytes (or an Image), and gives a tensor when the last step
 * is ToTensor, Normalize or PILToTensor.
 */
export const transforms = {
  /** The steps in order, as one function of the image's bytes (or pixels). */
  Compose<const S extends readonly ImageStep[]>(steps: S): (input: Uint8Array | Image) => TransformOutput<S> {
    const frozen = steps.map((s) => ({ ...s }));
    return (input) => call(() => host('transform')(input, frozen)) as TransformOutput<S>;
  },
  /**
   * A number: the shorter side to that size, the other scaled (truncated) and held to maxSize; [h, w]:
   * exactly that size. Bilinear by default; antialiased as Pillow always is (antialias: false resizes
   * as torch's interpolate does without it).
   */
  Resize(
    size: number | readonly [number] | readonly [number, number],
    options: { interpolation?: Interpolation; maxSize?: number; antialias?: boolean } = {},
  ) {
    return { op: 'resize', size, ...options } as const;
  },
  /** The centre size × size (or [h, w]) region, padded with 0 where the image is smaller. */
  CenterCrop(size: number | readonly [number] | readonly [number, number]) {
    return { op: 'centerCrop', size } as const;
  },
  /** Luma (Pillow's convert('L')), as 1 channel or repeated over 3. */
  Grayscale(channels: 1 | 3 = 1) {
    return { op: 'grayscale', channels } as const;
  },
  /** FP32 in [0, 1] (÷255), channels first (or HWC). */
  ToTensor(options: { layout?: 'CHW' | 'HWC' } = {}) {
    return { op: 'toTensor', ...options } as const;
  },
  /** The bytes as UINT8, channels first (or HWC). */
  PILToTensor(options: { layout?: 'CHW' | 'HWC' } = {}) {
    return { op: 'pilToTensor', ...options } as const;
  },
  /** (x − mean) ÷ std per channel, after ToTensor. */
  Normalize(mean: readonly number[], std: readonly number[]) {
    return { op: 'normalize', mean, std } as const;
  },
};
