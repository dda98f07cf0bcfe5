/**
 * Pillow and torchvision.transforms as the reference for images (test/fixtures/image_reference.py):
 * the test images it makes, and what `Image.open(f).convert(mode)` and `T.Compose(steps)` give.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import type { ImageStep } from '../../sdk/image.js';
import { PYTHON, REPO_ROOT } from './fixtures.js';

const SCRIPT = join(REPO_ROOT, 'test', 'fixtures', 'image_reference.py');

/** Writes the test images (JPEG, PNG and WebP of several kinds and sizes) into `dir`; their names. */
export function makeTestImages(dir: string): string[] {
  return JSON.parse(execFileSync(PYTHON, [SCRIPT, 'make', dir], { encoding: 'utf8' })) as string[];
}

export interface ImageCase {
  /** A path, or a name under `dir`. */
  file: string;
  mode?: 'RGB' | 'L' | 'RGBA';
  steps: readonly ImageStep[];
}

export interface ImageReference {
  shape: number[];
  dtype: 'FP32' | 'UINT8';
  bytes: Buffer;
}

/** torchvision's answers to the cases, in one python3 process (their bytes written under `dir`). */
export function torchvision(dir: string, cases: readonly ImageCase[]): ImageReference[] {
  const runs = cases.map((c, i) => ({ ...c, file: join(dir, c.file), out: join(dir, `reference-${i}.bin`) }));
  const meta = JSON.parse(
    execFileSync(PYTHON, [SCRIPT, 'run'], { input: JSON.stringify(runs), encoding: 'utf8' }),
  ) as Omit<ImageReference, 'bytes'>[];
  return meta.map((m, i) => ({ ...m, bytes: readFileSync(runs[i]!.out) }));
}

/** An FP32 reference's values. */
export function floats(ref: ImageReference): Float32Array {
  return new Float32Array(ref.bytes.buffer, ref.bytes.byteOffset, ref.bytes.byteLength / 4);
}
