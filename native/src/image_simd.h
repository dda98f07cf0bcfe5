// The resize's hot loop in vector instructions where the CPU has them (AVX2 on x86-64, chosen at
// run time: the addon is built for any x86-64), giving the same integers as the scalar loop in
// image_ops.cc, so a resize gives Pillow's bytes either way.
#pragma once

#include <cstdint>

namespace hearth::image::simd {

// Pillow's fixed point: two bits of headroom for weights that sum past 1 or dip below 0 (bicubic).
constexpr int kPrecisionBits = 32 - 8 - 2;

// Whether HorizontalRow runs here (the caller then pads its weights).
bool HasHorizontalRow();

// One output row of the horizontal pass over `channels` (3 or 4) interleaved channels: output
// pixel i is the sum over its taps of row's pixels bounds[2i] + t times weights[i * even + t]
// (t < bounds[2i + 1]; the weights past a pixel's taps are 0, up to an even count), rounded and
// clipped to 8 bits. `end` is the end of the buffer `row` lies in: no load passes it, and the
// pixels from the first whose loads would are left to the caller. Returns how many it made (0 where
// it does not run).
int HorizontalRow(int channels, const uint8_t* row, const uint8_t* end, uint8_t* out, int width, const int* bounds,
                   const int32_t* weights, int even);

}  // namespace hearth::image::simd
