/**
 * The image functions a hook calls through the SDK (sdk/image.ts), run by the hook's thread in the
 * native addon (native/src/image*.cc), never in the hook's isolate: decode as Pillow does, then
 * torchvision.transforms' steps with torchvision's own size and offset arithmetic (here), and
 * Pillow's resampling (there). The steps are the hook's, and as hostile as its input: each is
 * checked here, and every buffer the addon makes is bounded by the image limits before it is made.
 *
 * One call into the addon per transform: a Resize followed by a CenterCrop resamples only what the
 * crop keeps (the same bytes), and no intermediate image crosses into JS.
 */
import { InvalidInputError } from '../../sdk/errors.js';
import type { DecodedImage, Image, ImageStep } from '../../sdk/image.js';
import type { Tensor } from '../../sdk/tensor.js';
import type { RawImageStep } from '../engine/index.js';
import { imageEncode, imageInspect, imageRun } from '../engine/index.js';

/** The most pixels one image (decoded, resized or cropped) may have: 40 MP, as a 7,300 × 5,500 photo. */
export const MAX_PIXELS = 40_000_000;

/** The most pixels one call's steps may make in all (the decode included): a bound on its time. */
export const WORK_PIXELS = 3 * MAX_PIXELS;

export interface ImageLimits {
  maxPixels: number;
  /** The most bytes one buffer of a call may take: the hook's memory limit. */
  maxBytes: number;
}

/** The functions an SDK call reaches through `globalThis.__hearth` (in an isolate, or not). */
export interface ImageHost {
  decodeImage(bytes: Uint8Array): DecodedImage;
  readImage(bytes: Uint8Array, mode: unknown): Image;
  transform(input: unknown, steps: unknown): Tensor | Image;
  encodeImage(image: unknown, format: unknown, quality: unknown): Uint8Array;
}

/** Python's round(): halves to even (torchvision's crop offsets use it). */
export function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

type Size = readonly [height: number, width: number];

function positiveInt(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 1_000_000) {
    throw new InvalidInputError(`${what} must be an integer from 1 to 1000000, not ${JSON.stringify(v)}`);
  }
  return v;
}

/** An int, or [h, w], or [size] (torchvision's forms); `single` says which it was. */
function sizeOf(v: unknown, what: string): { size: Size; single: boolean } {
  if (typeof v === 'number') return { size: [positiveInt(v, what), v], single: true };
  if (Array.isArray(v) && v.length === 1) return { size: [positiveInt(v[0], what), v[0]], single: true };
  if (Array.isArray(v) && v.length === 2)
    return { size: [positiveInt(v[0], `${what}[0]`), positiveInt(v[1], `${what}[1]`)], single: false };
  throw new InvalidInputError(`${what} is a number or [height, width]`);
}

/**
 * torchvision's Resize output size (0.14's _compute_resized_output_size): a single size is the
 * shorter side's, the longer side scaled and truncated, capped by maxSize; [h, w] is exact.
 */
export function resizedSize(height: number, width: number, size: unknown, maxSize: unknown): Size {
  const { size: s, single } = sizeOf(size, 'Resize size');
  if (!single) {
    if (maxSize !== undefined) throw new InvalidInputError('Resize maxSize works with a single size only');
    return s;
  }
  const [short, long] = width <= height ? [width, height] : [height, width];
  let newShort = s[0];
  let newLong = Math.trunc((newShort * long) / short);
  if (maxSize !== undefined) {
    const max = positiveInt(maxSize, 'Resize maxSize');
    if (max <= newShort)
      throw new InvalidInputError(`Resize maxSize (${max}) must be larger than its size (${newShort})`);
    if (newLong > max) [newShort, newLong] = [Math.trunc((max * newShort) / newLong), max];
  }
  return width <= height ? [newLong, newShort] : [newShort, newLong];
}

/** torchvision's center_crop: the region [top, left, height, width], padding (outside) split as it splits it. */
export function centerCropRegion(height: number, width: number, size: unknown): [number, number, number, number] {
  const {
    size: [ch, cw],
  } = sizeOf(size, 'CenterCrop size');
  const padLeft = cw > width ? Math.floor((cw - width) / 2) : 0;
  const padTop = ch > height ? Math.floor((ch - height) / 2) : 0;
  const w = cw > width ? width + padLeft + Math.floor((cw - width + 1) / 2) : width;
  const h = ch > height ? height + padTop + Math.floor((ch - height + 1) / 2) : height;
  return [roundHalfEven((h - ch) / 2) - padTop, roundHalfEven((w - cw) / 2) - padLeft, ch, cw];
}

const FILTERS = new Set(['bilinear', 'bicubic', 'nearest']);
const MODES: Record<string, number> = { RGB: 3, L: 1, RGBA: 4 };

function numbers(v: unknown, what: string): number[] {
  if (
    !Array.isArray(v) ||
    v.length === 0 ||
    v.length > 4 ||
    !v.every((x) => typeof x === 'number' && Number.isFinite(x))
  )
    throw new InvalidInputError(`${what} is an array of 1 to 4 finite numbers`);
  return v as number[];
}

/**
 * The addon's steps for `steps` on an image of `height` × `width` × `channels`: sizes resolved as
 * torchvision resolves them, a crop right after a resize folded into the resize's window.
 */
export function plan(
  input: { width: number; height: number },
  channels: number,
  steps: unknown,
): { decodeChannels: number; steps: RawImageStep[] } {
  if (!Array.isArray(steps) || steps.length > 64) throw new InvalidInputError('transforms are an array of steps');
  let { width, height } = input;
  let c = channels;
  let decodeChannels = channels;
  const out: RawImageStep[] = [];
  let tensor: Extract<RawImageStep, { op: 'tensor' }> | undefined;
  let gray = false;
  for (const [i, raw] of (steps as unknown[]).entries()) {
    if (typeof raw !== 'object' || raw === null) throw new InvalidInputError(`transform step ${i} is not a step`);
    const step = raw as ImageStep & Record<string, unknown>;
    if (tensor && step.op !== 'normalize')
      throw new InvalidInputError(`${step.op} comes after ToTensor: only Normalize may follow it`);
    switch (step.op) {
      case 'resize': {
        const filter = step.interpolation ?? 'bilinear';
        if (!FILTERS.has(filter)) throw new InvalidInputError(`Resize interpolation is bilinear, bicubic or nearest`);
        const [h, w] = resizedSize(height, width, step.size, step.maxSize);
        // torchvision returns the image itself when a single size leaves it as it is.
        if (h === height && w === width) break;
        out.push({ op: 'resize', width: w, height: h, filter, antialias: step.antialias !== false });
        [height, width] = [h, w];
        break;
      }
      case 'centerCrop': {
        const [top, left, h, w] = centerCropRegion(height, width, step.size);
        const last = out.at(-1);
        if (last?.op === 'resize' && !last.window && top >= 0 && left >= 0 && top + h <= height && left + w <= width) {
          last.window = { top, left, height: h, width: w };
        } else {
          out.push({ op: 'crop', top, left, height: h, width: w });
        }
        [height, width] = [h, w];
        break;
      }
      case 'grayscale': {
        const n = step.channels ?? 1;
        if (n !== 1 && n !== 3) throw new InvalidInputError('Grayscale makes 1 or 3 channels');
        // Once: a pass over the whole image that the call's pixel budget does not count.
        if (gray) throw new InvalidInputError('Grayscale comes once');
        gray = true;
        if (c < 3) throw new InvalidInputError('Grayscale takes an RGB image');
        // First of all: decode straight to luma (the same bytes, a third of the memory).
        if (out.length === 0 && n === 1 && decodeChannels === 3) decodeChannels = 1;
        else out.push({ op: 'gray', channels: n });
        c = n;
        break;
      }
      case 'toTensor':
      case 'pilToTensor': {
        const layout = step.layout ?? 'CHW';
        if (layout !== 'CHW' && layout !== 'HWC') throw new InvalidInputError('a tensor layout is CHW or HWC');
        tensor = { op: 'tensor', layout, dtype: step.op === 'toTensor' ? 'FP32' : 'UINT8' };
        out.push(tensor);
        break;
      }
      case 'normalize': {
        if (tensor?.dtype !== 'FP32' || tensor.mean)
          throw new InvalidInputError('Normalize comes once, after ToTensor (a float tensor)');
        tensor.mean = numbers(step.mean, 'Normalize mean');
        tensor.std = numbers(step.std, 'Normalize std');
        for (const v of [tensor.mean, tensor.std])
          if (v.length !== 1 && v.length !== c)
            throw new InvalidInputError(`Normalize needs one mean and std, or one per channel (${c})`);
        if (tensor.std.includes(0)) throw new InvalidInputError('Normalize std must not be 0');
        break;
      }
      default:
        throw new InvalidInputError(`unknown transform step ${JSON.stringify((step as { op?: unknown }).op)}`);
    }
  }
  holdWork(input, out);
  return { decodeChannels, steps: out };
}

/**
 * Each image a step makes is held to the limits natively; the call's work as a whole is held here,
 * since a call runs outside the isolate's time limit: the pixels its steps make, in all.
 */
function holdWork(input: { width: number; height: number }, out: readonly RawImageStep[]): void {
  const regions = [input, ...out.map((s) => (s.op === 'resize' ? (s.window ?? s) : s.op === 'crop' ? s : undefined))];
  let made = 0;
  for (const [i, r] of regions.entries()) {
    if (!r) continue;
    if (r.width * r.height > MAX_PIXELS)
      throw new InvalidInputError(
        `${i === 0 ? 'the image' : 'a step'} would be ${r.width}×${r.height} pixels, more than the ${MAX_PIXELS} an image may have here`,
      );
    made += r.width * r.height;
  }
  if (made > WORK_PIXELS)
    throw new InvalidInputError(
      `the transforms would make ${made} pixels in all, more than the ${WORK_PIXELS} one call may`,
    );
}

/** Bytes on memory of their own: a SharedArrayBuffer's (the addon takes none) are copied. */
function own(bytes: unknown): Uint8Array {
  if (!(bytes instanceof Uint8Array)) throw new InvalidInputError('an image is its bytes (a Uint8Array)');
  return bytes.buffer instanceof ArrayBuffer ? bytes : new Uint8Array(bytes);
}

function isImage(v: unknown): v is Image {
  return typeof v === 'object' && v !== null && !(v instanceof Uint8Array) && 'data' in v;
}

/** The image functions, bounded by `limits`: what a hook's thread hands its hooks as __hearth. */
export function imageHost(limits: ImageLimits): ImageHost {
  const run = (input: Uint8Array | Image, steps: RawImageStep[]) =>
    imageRun(input, steps, limits.maxPixels, limits.maxBytes) as Tensor | Image;
  const pixelsOf = (image: Image): Image => ({ ...image, data: own(image.data) });
  return {
    decodeImage(bytes) {
      const img = run(own(bytes), [{ op: 'decode', channels: 4 }]) as Image;
      return { width: img.width, height: img.height, data: img.data };
    },
    readImage(bytes, mode) {
      const channels = MODES[String(mode ?? 'RGB')];
      if (!channels) throw new InvalidInputError('an image mode is RGB, L or RGBA');
      return run(own(bytes), [{ op: 'decode', channels }]) as Image;
    },
    transform(input, steps) {
      if (isImage(input)) {
        const p = plan(input, input.channels, steps);
        if (p.decodeChannels !== input.channels) p.steps.unshift({ op: 'gray', channels: 1 });
        return run(pixelsOf(input), p.steps);
      }
      const bytes = own(input);
      const info = imageInspect(bytes);
      const p = plan(info, 3, steps);
      return run(bytes, [{ op: 'decode', channels: p.decodeChannels }, ...p.steps]);
    },
    encodeImage(image, format, quality) {
      if (!isImage(image)) throw new InvalidInputError('encodeImage takes {width, height, channels, data}');
      if (format !== 'png' && format !== 'jpeg') throw new InvalidInputError('images encode as png or jpeg');
      if (
        quality !== undefined &&
        !(Number.isInteger(quality) && (quality as number) >= 1 && (quality as number) <= 100)
      )
        throw new InvalidInputError('JPEG quality is an integer from 1 to 100');
      return imageEncode(pixelsOf(image), format, (quality as number | undefined) ?? 75);
    },
  };
}
