/**
 * `hearth init --template image` as a user runs it: the scaffold deploys as it is, and a photo sent
 * with `hearth invoke --file` gets the top 5 that PIL + torchvision.transforms + the same model.pt in
 * python3-torch give.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { cliIn } from '../../helpers/cli.js';
import { floats, makeTestImages, torchvision } from '../../helpers/images.js';
import { testNode } from '../../helpers/node.js';
import { pythonForward } from '../../helpers/reference.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-init-image-'));
afterAll(() => rm(dir, { recursive: true, force: true }));
const { hearth, parsed } = cliIn(dir);

describe('hearth init --template image', () => {
  it('scaffolds a classifier that answers as PIL + torchvision + python3-torch do', { timeout: 180_000 }, async () => {
    const node = await testNode(join(dir, 'node'));
    try {
      const url = node.httpUrl;
      const fn = join(dir, 'classifier');
      const init = await parsed<{ name: string; model: boolean; files: string[] }>(
        url,
        'init',
        fn,
        '--template',
        'image',
      );
      expect(init.model).toBe(true);
      expect(init.files).toContain('hook.ts');
      expect(await parsed<{ status: string }>(url, 'deploy', fn, '--wait')).toMatchObject({ status: 'ready' });

      const images = join(dir, 'images');
      makeTestImages(images);
      const [x] = torchvision(images, [
        {
          file: 'tall.jpg',
          steps: [
            { op: 'resize', size: 256 },
            { op: 'centerCrop', size: 224 },
            { op: 'toTensor' },
            { op: 'normalize', mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] },
          ],
        },
      ]);
      const logits = pythonForward(join(fn, 'model.pt'), [{ dtype: 'FP32', shape: [1, 3, 224, 224], data: floats(x!) }])
        .outputs[0]!.data as Float32Array;
      const max = Math.max(...logits);
      const exp = Array.from(logits, (l) => Math.exp(l - max));
      const sum = exp.reduce((a, b) => a + b, 0);
      const expected = exp
        .map((e, index) => ({ index, score: e / sum }))
        .sort((a, b) => b.score - a.score)
        .slice(0, 5);

      const answer = await parsed<{ top5: { index: number; score: number }[] }>(
        url,
        'invoke',
        init.name,
        '--file',
        join(images, 'tall.jpg'),
        '--content-type',
        'image/jpeg',
      );
      expect(answer.top5.map((t) => t.index)).toEqual(expected.map((e) => e.index));
      for (const [i, t] of answer.top5.entries()) expect(Math.abs(t.score - expected[i]!.score)).toBeLessThan(1e-4);
      // JSON is the caller's mistake, said as such.
      const json = await hearth(url, 'invoke', init.name, '--data', '{"x": 1}');
      expect(json.code).not.toBe(0);
      expect(json.err).toMatch(/send an image/);
    } finally {
      await node.close();
    }
  });
});
