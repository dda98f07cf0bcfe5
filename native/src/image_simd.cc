// AVX2 for image_simd.h. Each output pixel's sum is a quad of 32-bit lanes ([r, g, b, ·] or
// [r, g, b, a]) in each half of a 256-bit register: two taps a step, every pixel the same steps
// (its weights padded with 0), the two halves added, then the scalar loop's shift and clip (Clip8).
#include "image_simd.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hearth::image::simd {

namespace {

constexpr int kHalf = 1 << (kPrecisionBits - 1);

#if defined(__x86_64__)
template <int C>
__attribute__((target("avx2"))) int Row(const uint8_t* row, const uint8_t* end, uint8_t* o, int width,
                                         const int* bounds, const int32_t* weights, int even) {
  // A tap pair's 8 bytes from its first pixel, its two pixels' channels spread to 32-bit lanes.
  const __m128i spread = C == 3 ? _mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, -1, -1, -1, -1, -1, -1, -1, -1)
                                : _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i twice = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  for (int xx = 0; xx < width; xx++) {
    const uint8_t* p = row + bounds[xx * 2] * C;
    const int32_t* k = weights + static_cast<size_t>(xx) * even;
    uint8_t* out = o + xx * C;
    // This pixel and the rest go the scalar way (pixels only start further right as xx grows).
    if (end - p < C * even + 8) return xx;
    __m256i acc = _mm256_setr_epi32(kHalf, kHalf, kHalf, kHalf, 0, 0, 0, 0);
    for (int x = 0; x < even; x += 2) {
      uint64_t bytes;
      std::memcpy(&bytes, p + x * C, sizeof bytes);
      const __m256i px = _mm256_cvtepu8_epi32(_mm_shuffle_epi8(_mm_cvtsi64_si128(static_cast<int64_t>(bytes)), spread));
      const __m256i w = _mm256_permutevar8x32_epi32(
          _mm256_castsi128_si256(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(k + x))), twice);
      acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(px, w));
    }
    // Clip8 on the four lanes: the shift, then saturation to int16 and to uint8.
    const __m128i sum = _mm_srai_epi32(_mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1)),
                                       kPrecisionBits);
    const uint32_t quad = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_packus_epi16(_mm_packs_epi32(sum, sum), sum)));
    // A 3-channel pixel's fourth byte lands on the next pixel's first, written after it.
    std::memcpy(out, &quad, C == 4 || xx + 1 < width ? 4 : 3);
  }
  return width;
}
#endif

}  // namespace

bool HasHorizontalRow() {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
#else
  return false;
#endif
}

int HorizontalRow(int channels, const uint8_t* row, const uint8_t* end, uint8_t* out, int width, const int* bounds,
                  const int32_t* weights, int even) {
#if defined(__x86_64__)
  if (channels == 3) return Row<3>(row, end, out, width, bounds, weights, even);
  if (channels == 4) return Row<4>(row, end, out, width, bounds, weights, even);
#endif
  return 0;
}

}  // namespace hearth::image::simd
