/**
 * The image functions a hook's thread runs (runtime/hooks/images.ts over the addon), against the
 * reference a Python user has: Pillow's decoders and torchvision.transforms on the same files
 * (test/fixtures/image_reference.py, python3-pil and python3-torchvision).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { native } from '../../../runtime/engine/binding.js';
import { imageHost, MAX_PIXELS } from '../../../runtime/hooks/images.js';
import { bundleHook, HookPool } from '../../../runtime/hooks/index.js';
import { InvalidInputError } from '../../../sdk/errors.js';
import type { Image } from '../../../sdk/image.js';
import { transforms as T } from '../../../sdk/image.js';
import { parseSpec } from '../../../sdk/spec/index.js';
import type { Tensor } from '../../../sdk/tensor.js';
import { PYTHON, REPO_ROOT } from '../../helpers/fixtures.js';
import type { ImageCase, ImageReference } from '../../helpers/images.js';
import { makeTestImages, torchvision } from '../../helpers/images.js';
import { maxAbsDiff } from '../../helpers/random.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-images-'));
const files = makeTestImages(dir);
const host = imageHost({ maxPixels: MAX_PIXELS, maxBytes: 256 * 2 ** 20 });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Case = ImageCase;
const reference = (cases: readonly Case[]) => torchvision(dir, cases);

/** Hearth's answer, through the functions the SDK reaches (Compose → host.transform). */
function hearth(c: Case): { shape: number[]; data: Uint8Array | Float32Array } {
  const bytes = new Uint8Array(readFileSync(join(dir, c.file)));
  const input = c.mode && c.mode !== 'RGB' ? host.readImage(bytes, c.mode) : bytes;
  const out = host.transform(input, c.steps);
  if ('dtype' in out) return { shape: out.shape, data: out.data as Float32Array | Uint8Array };
  const img = out as Image;
  return {
    shape: img.channels === 1 ? [img.height, img.width] : [img.height, img.width, img.channels],
    data: img.data,
  };
}

/** The largest difference between Hearth's values and the reference's, and how many differ. */
function compare(c: Case, ref: ImageReference): { max: number; differing: number } {
  const got = hearth(c);
  expect(got.shape, c.file).toEqual(ref.shape);
  const want =
    ref.dtype === 'FP32'
      ? new Float32Array(ref.bytes.buffer, ref.bytes.byteOffset, ref.bytes.byteLength / 4)
      : new Uint8Array(ref.bytes.buffer, ref.bytes.byteOffset, ref.bytes.byteLength);
  expect(got.data.length).toBe(want.length);
  expect(got.data instanceof Float32Array).toBe(ref.dtype === 'FP32');
  let max = 0;
  let differing = 0;
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got.data[i]! - want[i]!);
    if (d > max) max = d;
    if (d > 0) differing++;
  }
  return { max, differing };
}

const IMAGENET = [0.485, 0.456, 0.406];
const IMAGENET_STD = [0.229, 0.224, 0.225];
const classifier = (interpolation: 'bilinear' | 'bicubic') =>
  [T.Resize(256, { interpolation }), T.CenterCrop(224), T.ToTensor(), T.Normalize(IMAGENET, IMAGENET_STD)] as const;

describe('image functions against Pillow and torchvision', () => {
  it('decodes every test image (JPEG 4:2:0, 4:4:4, progressive, gray, CMYK; PNG RGBA, palette, gray, 1-bit; WebP lossy and lossless) to the pixels Pillow gives', () => {
    const cases = files.map((file) => ({ file, steps: [] }));
    const refs = reference(cases);
    for (const [i, c] of cases.entries()) expect(compare(c, refs[i]!), c.file).toEqual({ max: 0, differing: 0 });
    // L and RGBA as convert('L') / convert('RGBA') give them.
    const modes: Case[] = [
      { file: 'photo.jpg', mode: 'L', steps: [] },
      { file: 'alpha.png', mode: 'RGBA', steps: [] },
      { file: 'photo.webp', mode: 'L', steps: [] },
    ];
    const modeRefs = reference(modes);
    for (const [i, c] of modes.entries())
      expect(compare(c, modeRefs[i]!), `${c.file} ${c.mode}`).toEqual({ max: 0, differing: 0 });
  });

  it("gives torchvision's classifier preprocessing (Resize 256, CenterCrop 224, ToTensor, Normalize) on every image, bilinear and bicubic, to the float", () => {
    const cases = files.flatMap((file) => [
      { file, steps: classifier('bilinear') },
      { file, steps: classifier('bicubic') },
    ]);
    const refs = reference(cases);
    for (const [i, c] of cases.entries()) {
      const { max } = compare(c, refs[i]!);
      // The same bytes before ToTensor, and the same float32 arithmetic after it.
      expect(max, `${c.file} ${(c.steps[0] as { interpolation: string }).interpolation}`).toBeLessThanOrEqual(1e-6);
    }
  });

  it("follows torchvision's sizes and offsets: exact sizes, upscaling, maxSize, padded and odd crops, grayscale, nearest, layouts", () => {
    const cases: Case[] = [
      { file: 'photo.jpg', steps: [T.Resize([300, 200], { interpolation: 'bicubic' }), T.PILToTensor()] },
      { file: 'small.jpg', steps: [T.Resize(1000), T.PILToTensor()] },
      { file: 'tall.jpg', steps: [T.Resize(256, { maxSize: 300 }), T.PILToTensor()] },
      { file: 'tall.jpg', steps: [T.Resize([256]), T.CenterCrop([201, 99]), T.PILToTensor()] },
      { file: 'small.jpg', steps: [T.CenterCrop(224), T.PILToTensor()] },
      { file: 'photo.jpg', steps: [T.CenterCrop([501, 101]), T.PILToTensor()] },
      { file: 'photo.jpg', steps: [T.Resize(480), T.CenterCrop(3), T.PILToTensor()] },
      { file: 'photo.png', steps: [T.Grayscale(), T.Resize(64), T.ToTensor(), T.Normalize([0.5], [0.5])] },
      { file: 'photo.webp', steps: [T.Resize(200), T.Grayscale(3), T.PILToTensor()] },
      { file: 'photo.jpg', steps: [T.Resize(97, { interpolation: 'nearest' }), T.PILToTensor()] },
      { file: 'small.jpg', steps: [T.Resize(333, { interpolation: 'nearest' }), T.PILToTensor()] },
      { file: 'photo.jpg', steps: [T.Resize(64), T.ToTensor({ layout: 'HWC' })] },
      { file: 'photo.jpg', steps: [T.Resize(64), T.PILToTensor({ layout: 'HWC' })] },
      { file: 'photo.jpg', mode: 'L', steps: [T.Resize(100, { interpolation: 'bicubic' }), T.ToTensor()] },
      { file: 'alpha.png', mode: 'RGBA', steps: [T.Resize(50), T.PILToTensor()] },
      { file: 'photo.jpg', steps: [T.Resize(99), T.CenterCrop(64)] },
      // Edges: one pixel up to many, many down to one, a one-row strip.
      { file: 'dot.png', steps: [T.Resize([300, 200], { interpolation: 'bicubic' }), T.PILToTensor()] },
      { file: 'photo.jpg', steps: [T.Resize(1), T.PILToTensor()] },
      { file: 'photo.jpg', steps: [T.Resize([1, 1], { interpolation: 'bicubic' }), T.PILToTensor()] },
      { file: 'strip.png', steps: [T.Resize([7, 500]), T.CenterCrop([3, 20]), T.PILToTensor()] },
      { file: 'strip.png', steps: [T.Resize(3, { interpolation: 'nearest' }), T.PILToTensor()] },
    ];
    const refs = reference(cases);
    for (const [i, c] of cases.entries()) {
      expect(compare(c, refs[i]!).max, `case ${i}: ${c.file} ${JSON.stringify(c.steps)}`).toBeLessThanOrEqual(1e-6);
    }
  });

  it('resizes without antialias as torch interpolates a uint8 tensor (antialias=False), within 1/255', () => {
    const cases: Case[] = [
      { file: 'photo.jpg', steps: [T.Resize(128, { antialias: false }), T.PILToTensor()] },
      {
        file: 'photo.jpg',
        steps: [T.Resize([200, 300], { antialias: false, interpolation: 'bicubic' }), T.PILToTensor()],
      },
      { file: 'small.jpg', steps: [T.Resize(300, { antialias: false }), T.PILToTensor()] },
    ];
    const refs = reference(cases);
    for (const [i, c] of cases.entries()) expect(compare(c, refs[i]!).max, `case ${i}`).toBeLessThanOrEqual(1);
  });

  it('encodes PNG losslessly and JPEG as Pillow decodes it', () => {
    const px = host.readImage(new Uint8Array(readFileSync(join(dir, 'small.jpg'))), 'RGB');
    const png = host.encodeImage(px, 'png', undefined);
    expect(Array.from(png.subarray(1, 4))).toEqual([0x50, 0x4e, 0x47]);
    expect(Buffer.from(host.readImage(png, 'RGB').data).equals(Buffer.from(px.data))).toBe(true);
    const jpeg = host.encodeImage(px, 'jpeg', 90);
    const again = host.readImage(jpeg, 'RGB');
    let max = 0;
    for (let i = 0; i < px.data.length; i++) max = Math.max(max, Math.abs(again.data[i]! - px.data[i]!));
    expect(max).toBeGreaterThan(0); // lossy
    expect(max).toBeLessThan(80);
    // Pillow reads Hearth's JPEG to the same pixels Hearth does.
    const file = join(dir, 'encoded.jpg');
    execFileSync(PYTHON, ['-c', `open(${JSON.stringify(file)}, 'wb').write(bytes.fromhex(input()))`], {
      input: Buffer.from(jpeg).toString('hex'),
    });
    const [ref] = reference([{ file: 'encoded.jpg', steps: [] }]);
    expect(Buffer.from(again.data).equals(ref!.bytes)).toBe(true);
    expect(() => host.encodeImage({ ...px, channels: 4 }, 'jpeg', 90)).toThrow(InvalidInputError);
  });
});

describe('image functions against a hostile hook or body', () => {
  it('refuses headers that declare more pixels than an image may have, before decoding a pixel', () => {
    // small.jpg's SOF0 frame header says 65000 × 65000 (12.7 GB of RGB).
    const jpeg = small();
    const sof = jpeg.findIndex((b, i) => b === 0xff && (jpeg[i + 1] === 0xc0 || jpeg[i + 1] === 0xc2));
    new DataView(jpeg.buffer).setUint16(sof + 5, 65_000);
    new DataView(jpeg.buffer).setUint16(sof + 7, 65_000);
    expect(() => host.transform(jpeg, classifier('bilinear'))).toThrow(/65000×65000 pixels, more than the 40000000/);
    const png = new Uint8Array(readFileSync(join(dir, 'gray.png')));
    new DataView(png.buffer).setUint32(16, 60_000);
    new DataView(png.buffer).setUint32(20, 60_000);
    expect(() => host.readImage(png, 'RGB')).toThrow(InvalidInputError);
    // A progressive JPEG's coefficients take more than its pixels: libjpeg's own buffers are held
    // to the hook's memory too (640 × 480 × 3 = 921,600 bytes of pixels fit in 1 MB; they do not).
    const progressive = new Uint8Array(readFileSync(join(dir, 'photo-progressive.jpg')));
    expect(() => imageHost({ maxPixels: MAX_PIXELS, maxBytes: 1_000_000 }).readImage(progressive, 'RGB')).toThrow(
      /the JPEG does not decode: it needs more memory than the hook's memory allows/,
    );
    // Within the pixel count but past the hook's memory: 640 × 480 × 3 bytes > 512 KB.
    const tight = imageHost({ maxPixels: MAX_PIXELS, maxBytes: 512 * 1024 });
    expect(() => tight.readImage(new Uint8Array(readFileSync(join(dir, 'photo.jpg'))), 'RGB')).toThrow(
      /more than the hook's memory allows/,
    );
  });

  it('refuses steps that would make too large an image, and steps that are not steps', () => {
    const refuse = (steps: unknown, message: RegExp) => {
      expect(() => host.transform(small(), steps)).toThrow(InvalidInputError);
      expect(() => host.transform(small(), steps)).toThrow(message);
    };
    refuse([T.Resize([100_000, 100_000])], /pixels, more than/);
    refuse([T.Resize(1_000_000)], /pixels, more than/);
    refuse([T.CenterCrop([60_000, 60_000])], /pixels, more than/);
    // Each within the pixel limit, together past what one call may make (it runs outside the
    // isolate's time limit): refused before any is made.
    refuse(
      [T.Resize([6000, 6000]), T.Resize([5999, 5999]), T.Resize([6000, 6000]), T.Resize([5999, 5999])],
      /pixels in all, more than the 120000000 one call may/,
    );
    refuse([T.Grayscale(3), T.Grayscale(3)], /Grayscale comes once/);
    refuse([{ op: 'exec', size: 1 }], /unknown transform step "exec"/);
    refuse([T.Resize(-1)], /integer from 1/);
    refuse([T.Resize(2.5)], /integer from 1/);
    refuse([{ op: 'resize', size: 'big' }], /number or \[height, width\]/);
    refuse([T.Resize(10, { interpolation: 'lanczos' as 'bilinear' })], /bilinear, bicubic or nearest/);
    refuse([T.Normalize([0.5], [0.5])], /after ToTensor/);
    refuse([T.ToTensor(), T.Normalize([1, 2, 3, 4, 5], [1])], /1 to 4 finite numbers/);
    refuse([T.ToTensor(), T.Normalize([0, 0], [1, 1])], /one per channel \(3\)/);
    refuse([T.ToTensor(), T.Normalize([0], [0])], /must not be 0/);
    refuse([T.ToTensor(), T.Resize(10)], /only Normalize may follow/);
    refuse('resize', /array of steps/);
    refuse(
      Array.from({ length: 65 }, () => T.Resize(10)),
      /array of steps/,
    );
    expect(() => host.transform({ width: 10, height: 10, channels: 3, data: new Uint8Array(299) }, [])).toThrow(
      /width × height × channels/,
    );
    expect(() => host.transform({ width: 1e6, height: 1e6, channels: 3, data: new Uint8Array(3) }, [])).toThrow(
      InvalidInputError,
    );
  });

  it("holds a resize's filter weights to the hook's memory (40 M pixels to 1 would be 3 GB of them)", () => {
    const line = { width: 40_000_000, height: 1, channels: 1 as const, data: new Uint8Array(40_000_000) };
    expect(() => host.transform(line, [T.Resize([1, 1], { interpolation: 'bicubic' })])).toThrow(
      /bytes of filter weights, more than the hook's memory allows/,
    );
    // A step the host would never send, straight to the addon: an error, not an abort.
    const px = { width: 4, height: 4, channels: 3, data: new Uint8Array(48) };
    expect(() => native().imageRun!(px, [{ op: 'gray', channels: -1 }], MAX_PIXELS, 2 ** 28)).toThrow(
      /grayscale makes 1 or 3 channels/,
    );
  });

  it('takes bytes on a SharedArrayBuffer (copied), and refuses a JPEG quality that is no integer from 1 to 100', () => {
    const bytes = small();
    const shared = new Uint8Array(new SharedArrayBuffer(bytes.length));
    shared.set(bytes);
    const a = host.transform(shared, classifier('bilinear')) as Tensor;
    const b = host.transform(bytes, classifier('bilinear')) as Tensor;
    expect(maxAbsDiff(a.data as Float32Array, b.data as Float32Array)).toBe(0);
    const px = host.readImage(bytes, 'RGB');
    for (const q of [0, 101, 2.5, -4294967295, Number.NaN, '90'])
      expect(() => host.encodeImage(px, 'jpeg', q), String(q)).toThrow(/integer from 1 to 100/);
  });

  it('refuses bytes that are no image, or a truncated one, as the caller’s error', () => {
    expect(() => host.transform(new Uint8Array([1, 2, 3]), [])).toThrow(/not a JPEG, PNG or WebP/);
    for (const name of ['photo.jpg', 'photo.png', 'photo.webp']) {
      const bytes = new Uint8Array(readFileSync(join(dir, name)));
      const cut = bytes.subarray(0, bytes.length >> 1);
      expect(() => host.transform(cut, classifier('bilinear')), name).toThrow(InvalidInputError);
    }
    expect(() => host.transform('not bytes', [])).toThrow(/Uint8Array/);
  });
});

describe('transforms in a hook', () => {
  it('runs on hook threads and inline, sandboxed and not, to the tensor torchvision gives', async () => {
    const spec = parseSpec({
      name: 'images',
      model: 'model.pt',
      hook: 'hook.ts',
      maxBatchSize: 8,
      inputs: [{ name: 'x', dtype: 'FP32', dims: [3, 224, 224] }],
      outputs: [{ name: 'logits', dtype: 'FP32', dims: [4] }],
    });
    const { path } = await bundleHook(join(REPO_ROOT, 'functions', 'image-classifier', 'hook.ts'), dir);
    const [want] = reference([{ file: 'tall.jpg', steps: classifier('bilinear') }]);
    const expected = new Float32Array(want!.bytes.buffer, want!.bytes.byteOffset, want!.bytes.byteLength / 4);
    const bytes = new Uint8Array(readFileSync(join(dir, 'tall.jpg')));
    for (const sandbox of [true, false]) {
      const hooks = await HookPool.create({ spec, version: 1, bundlePath: path, sandbox, threads: 2 });
      try {
        // Together: they run on the pool's threads (a lone one runs inline).
        const all = await Promise.all(
          Array.from({ length: 6 }, () => hooks.pre({ body: bytes.slice(), contentType: 'image/jpeg' }, {})),
        );
        for (const { tensors } of all) {
          expect(tensors.x!.shape).toEqual([1, 3, 224, 224]);
          expect(maxAbsDiff(tensors.x!.data as Float32Array, expected), `sandbox ${sandbox}`).toBeLessThanOrEqual(1e-6);
        }
        await expect(hooks.pre({ body: new Uint8Array([1, 2, 3]), contentType: 'image/jpeg' }, {})).rejects.toThrow(
          InvalidInputError,
        );
      } finally {
        await hooks.close();
      }
    }
  });
});

describe('Compose in the SDK', () => {
  it('gives the tensor type its last step makes, and runs through the host a hook thread installs', () => {
    (globalThis as { __hearth?: object }).__hearth = host;
    try {
      const f = T.Compose(classifier('bilinear'));
      const x: Tensor<'FP32'> = f(small());
      expect(x.dtype).toBe('FP32');
      expect(x.shape).toEqual([3, 224, 224]);
      const u: Tensor<'UINT8'> = T.Compose([T.Resize(10), T.PILToTensor()])(small());
      expect(u.shape).toEqual([3, 10, 15]);
      const img: Image = T.Compose([T.Resize(10)])(small());
      expect([img.width, img.height, img.channels]).toEqual([15, 10, 3]);
      expect(() => T.Compose([T.Resize(0)])(small())).toThrow(InvalidInputError);
    } finally {
      delete (globalThis as { __hearth?: object }).__hearth;
    }
  });
});

function small(): Uint8Array {
  return new Uint8Array(readFileSync(join(dir, 'small.jpg')));
}
