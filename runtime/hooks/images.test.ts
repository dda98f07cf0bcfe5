import { describe, expect, it } from 'vitest';

import { centerCropRegion, plan, resizedSize, roundHalfEven } from './images.js';

// torchvision 0.14's arithmetic, worked by hand (test/runtime/hooks/images.test.ts checks the
// pixels against torchvision itself).
describe("torchvision's size arithmetic", () => {
  it("rounds halves to even, as Python's round()", () => {
    expect([0.5, 1.5, 2.5, 58.5, -0.5, 3.49, 3.51].map(roundHalfEven)).toEqual([0, 2, 2, 58, -0, 3, 4]);
  });

  it('resizes the shorter side, truncating the longer, and caps it at maxSize', () => {
    expect(resizedSize(480, 640, 256, undefined)).toEqual([256, 341]); // int(256 · 640 / 480) = 341
    expect(resizedSize(500, 333, 256, undefined)).toEqual([384, 256]); // int(256 · 500 / 333) = 384
    expect(resizedSize(500, 333, [256], undefined)).toEqual([384, 256]);
    expect(resizedSize(500, 333, 256, 300)).toEqual([300, 200]); // int(300 · 256 / 384) = 200
    expect(resizedSize(480, 640, [100, 50], undefined)).toEqual([100, 50]);
    expect(() => resizedSize(480, 640, 256, 256)).toThrow(/must be larger/);
  });

  it('centres a crop with half-even offsets, and pads one larger than the image as torchvision does', () => {
    expect(centerCropRegion(256, 341, 224)).toEqual([16, 58, 224, 224]); // round(58.5) = 58
    expect(centerCropRegion(97, 150, 224)).toEqual([-63, -37, 224, 224]); // pads (37, 63, 37, 64)
    expect(centerCropRegion(480, 640, [501, 101])).toEqual([-10, 270, 501, 101]);
  });

  it('folds a crop after a resize into its window, and only one that lies inside it', () => {
    expect(
      plan({ width: 640, height: 480 }, 3, [
        { op: 'resize', size: 256 },
        { op: 'centerCrop', size: 224 },
      ]),
    ).toEqual({
      decodeChannels: 3,
      steps: [
        {
          op: 'resize',
          width: 341,
          height: 256,
          filter: 'bilinear',
          antialias: true,
          window: { top: 16, left: 58, height: 224, width: 224 },
        },
      ],
    });
    expect(
      plan({ width: 640, height: 480 }, 3, [
        { op: 'resize', size: 100 },
        { op: 'centerCrop', size: 224 },
      ]).steps,
    ).toEqual([
      { op: 'resize', width: 133, height: 100, filter: 'bilinear', antialias: true },
      { op: 'crop', top: -62, left: -45, height: 224, width: 224 },
    ]);
    expect(plan({ width: 640, height: 480 }, 3, [{ op: 'grayscale' }, { op: 'toTensor' }])).toEqual({
      decodeChannels: 1,
      steps: [{ op: 'tensor', layout: 'CHW', dtype: 'FP32' }],
    });
  });
});
