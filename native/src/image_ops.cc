// Resampling, cropping and luma: Pillow's ImagingResample (libImaging/Resample.c) for 8-bit
// images, so a resize here gives the bytes torchvision's Resize gives on a PIL image.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "image.h"
#include "image_simd.h"

namespace hearth::image {

namespace {

constexpr int kPrecisionBits = simd::kPrecisionBits;

inline uint8_t Clip8(int v) {
  const int x = v >> kPrecisionBits;
  return static_cast<uint8_t>(x < 0 ? 0 : x > 255 ? 255 : x);
}

double BilinearFilter(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

double BicubicFilter(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// For each output index: the first input index, how many follow, and their fixed-point weights.
struct Coefficients {
  int ksize = 0;
  std::vector<int> bounds;  // [first, count] per output index
  std::vector<int32_t> weights;
  std::vector<double> real;  // the same weights before fixed point (antialias=False resamples in float)
};

inline int32_t Fixed(double w) {
  return w < 0 ? static_cast<int32_t>(-0.5 + w * (1 << kPrecisionBits)) : static_cast<int32_t>(0.5 + w * (1 << kPrecisionBits));
}

// torch's upsample_bicubic2d (align_corners=False, what antialias=False resizes with): Keys'
// cubic with A = -0.75 on the four pixels around each sample, their indices clamped to the edge.
Coefficients TorchBicubic(int inSize, int outSize) {
  constexpr double A = -0.75;
  const auto near = [](double x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
  const auto far = [](double x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
  const double scale = static_cast<double>(inSize) / outSize;
  Coefficients c;
  c.ksize = 4;
  c.bounds.resize(static_cast<size_t>(outSize) * 2);
  c.weights.assign(static_cast<size_t>(outSize) * 4, 0);
  c.real.assign(static_cast<size_t>(outSize) * 4, 0);
  for (int xx = 0; xx < outSize; xx++) {
    const double src = (xx + 0.5) * scale - 0.5;
    const int x0 = static_cast<int>(std::floor(src));
    const double t = src - x0;
    const double w[4] = {far(t + 1), near(t), near(1 - t), far(2 - t)};
    const auto clamp = [&](int i) { return std::min(std::max(i, 0), inSize - 1); };
    const int xmin = clamp(x0 - 1);
    double k[4] = {0, 0, 0, 0};
    for (int j = 0; j < 4; j++) k[clamp(x0 - 1 + j) - xmin] += w[j];
    c.bounds[xx * 2] = xmin;
    c.bounds[xx * 2 + 1] = clamp(x0 + 2) - xmin + 1;
    for (int j = 0; j < 4; j++) {
      c.weights[static_cast<size_t>(xx) * 4 + j] = Fixed(k[j]);
      c.real[static_cast<size_t>(xx) * 4 + j] = k[j];
    }
  }
  return c;
}

// Pillow's precompute_coeffs and normalize_coeffs_8bpc, for the box (0, inSize).
Coefficients Precompute(int inSize, int outSize, Filter filter, bool antialias, const Limits& limits) {
  if (!antialias && filter == Filter::kBicubic) return TorchBicubic(inSize, outSize);
  double (*f)(double) = filter == Filter::kBicubic ? BicubicFilter : BilinearFilter;
  const double filterSupport = filter == Filter::kBicubic ? 2.0 : 1.0;
  const double scale = static_cast<double>(static_cast<float>(inSize)) / outSize;
  const double filterscale = antialias ? std::max(scale, 1.0) : 1.0;
  const double support = filterSupport * filterscale;
  Coefficients c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  // The filter widens with the scale: 40 M pixels to 1 would be 160 M weights a row (3 GB), from an
  // image within its limits. Its weights are held to the limits as an image is.
  const int64_t weightBytes = (int64_t{outSize} * c.ksize + c.ksize) * (sizeof(int32_t) + sizeof(double));
  if (weightBytes > limits.maxBytes) {
    throw ImageError("resizing " + std::to_string(inSize) + " pixels to " + std::to_string(outSize) +
                     " would take " + std::to_string(weightBytes) +
                     " bytes of filter weights, more than the hook's memory allows (" +
                     std::to_string(limits.maxBytes) + ")");
  }
  c.bounds.resize(static_cast<size_t>(outSize) * 2);
  c.weights.assign(static_cast<size_t>(outSize) * c.ksize, 0);
  c.real.assign(static_cast<size_t>(outSize) * c.ksize, 0);
  std::vector<double> k(c.ksize);
  for (int xx = 0; xx < outSize; xx++) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > inSize) xmax = inSize;
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; x++) {
      const double w = f((x + xmin - center + 0.5) * ss);
      k[x] = w;
      ww += w;
    }
    int32_t* out = &c.weights[static_cast<size_t>(xx) * c.ksize];
    for (int x = 0; x < xmax; x++) {
      const double w = ww != 0.0 ? k[x] / ww : k[x];
      out[x] = Fixed(w);
      c.real[static_cast<size_t>(xx) * c.ksize + x] = w;
    }
    c.bounds[xx * 2] = xmin;
    c.bounds[xx * 2 + 1] = xmax;
  }
  return c;
}

// One template per channel count, so the inner loops unroll.
// Output columns [left, left + out.width) of the full-width resize, from input rows firstRow on.
template <int C>
void Horizontal(const Pixels& in, int firstRow, int left, Pixels& out, const Coefficients& c) {
  // The vector kernel's weights, each pixel's padded to an even count.
  const bool vector = C >= 3 && simd::HasHorizontalRow();
  const int even = (c.ksize + 1) & ~1;
  std::vector<int32_t> pairs;
  if (vector) {
    pairs.assign(c.bounds.size() / 2 * even, 0);
    for (size_t i = 0; i < c.bounds.size() / 2; i++) std::copy_n(&c.weights[i * c.ksize], c.ksize, &pairs[i * even]);
  }
  for (int yy = 0; yy < out.height; yy++) {
    const uint8_t* row = in.data.data() + static_cast<size_t>(yy + firstRow) * in.width * C;
    uint8_t* o = out.data.data() + static_cast<size_t>(yy) * out.width * C;
    const int made = vector ? simd::HorizontalRow(C, row, in.data.data() + in.data.size(), o, out.width,
                                                  c.bounds.data() + left * 2,
                                                  pairs.data() + static_cast<size_t>(left) * even, even)
                            : 0;
    for (int xx = made; xx < out.width; xx++) {
      const int xmin = c.bounds[(xx + left) * 2], xmax = c.bounds[(xx + left) * 2 + 1];
      const int32_t* k = &c.weights[static_cast<size_t>(xx + left) * c.ksize];
      int ss[C];
      for (int ch = 0; ch < C; ch++) ss[ch] = 1 << (kPrecisionBits - 1);
      const uint8_t* p = row + xmin * C;
      for (int x = 0; x < xmax; x++) {
        for (int ch = 0; ch < C; ch++) ss[ch] += p[x * C + ch] * k[x];
      }
      for (int ch = 0; ch < C; ch++) o[xx * C + ch] = Clip8(ss[ch]);
    }
  }
}

// Output rows [top, top + out.height) of the full-height resize, over input columns [left,
// left + out.width); input row r is in.data's row r − rowShift.
// The vertical pass's loop vectorizes as it is: on x86-64, built for AVX2 beside the generic
// build, the CPU choosing at load time (GCC's target_clones, an ifunc).
#if defined(__x86_64__) && defined(__GLIBC__)
#define HEARTH_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define HEARTH_AVX2_CLONES
#endif
template <int C>
HEARTH_AVX2_CLONES void Vertical(const Pixels& in, int rowShift, int top, int left, Pixels& out, const Coefficients& c) {
  const size_t stride = static_cast<size_t>(out.width) * C;
  std::vector<int> ss(stride);
  for (int yy = 0; yy < out.height; yy++) {
    const int ymin = c.bounds[(yy + top) * 2] - rowShift, ymax = c.bounds[(yy + top) * 2 + 1];
    const int32_t* k = &c.weights[static_cast<size_t>(yy + top) * c.ksize];
    std::fill(ss.begin(), ss.end(), 1 << (kPrecisionBits - 1));
    // Row by row, so the inner loop runs along contiguous memory.
    for (int y = 0; y < ymax; y++) {
      const uint8_t* row = in.data.data() + (static_cast<size_t>(ymin + y) * in.width + left) * C;
      const int32_t w = k[y];
      for (size_t i = 0; i < stride; i++) ss[i] += row[i] * w;
    }
    uint8_t* o = out.data.data() + static_cast<size_t>(yy) * stride;
    for (size_t i = 0; i < stride; i++) o[i] = Clip8(ss[i]);
  }
}

// The window of a width × height resize (Pillow's two passes, horizontal first, each skipped
// where that side keeps its size) that `out` covers.
template <int C>
void Resample(const Pixels& in, int width, int height, const Window& w, Pixels& out, Filter filter, bool antialias,
              const Limits& limits) {
  const bool horizontal = width != in.width;
  const bool vertical = height != in.height;
  const Coefficients cv = Precompute(in.height, height, filter, antialias, limits);
  const Pixels* src = &in;
  Pixels temp;
  int shift = 0, left = w.left;
  if (horizontal) {
    // Only the rows the window's vertical pass reads (all of the window's when there is none).
    const int first = vertical ? cv.bounds[w.top * 2] : w.top;
    const int end = w.top + w.height - 1;
    const int last = vertical ? cv.bounds[end * 2] + cv.bounds[end * 2 + 1] : end + 1;
    temp.width = w.width;
    temp.height = last - first;
    temp.channels = C;
    limits.Check(temp.width, temp.height, C, "the resized image");
    temp.data.resize(static_cast<size_t>(temp.width) * temp.height * C);
    Horizontal<C>(in, first, w.left, temp, Precompute(in.width, width, filter, antialias, limits));
    src = &temp;
    shift = first;
    left = 0;
  }
  if (vertical) {
    Vertical<C>(*src, shift, w.top, left, out, cv);
  } else {
    const size_t row = static_cast<size_t>(w.width) * C;
    for (int y = 0; y < w.height; y++) {
      std::memcpy(out.data.data() + y * row, src->data.data() + (static_cast<size_t>(y + w.top - shift) * src->width + left) * C,
                  row);
    }
  }
}

// antialias=False as torchvision resizes a uint8 tensor: both passes in floating point, then
// clamped and rounded half to even once (Pillow's 8-bit passes round between them).
template <int C>
void ResampleFloat(const Pixels& in, int width, int height, const Window& w, Pixels& out, Filter filter,
                   const Limits& limits) {
  const Coefficients ch = Precompute(in.width, width, filter, false, limits);
  const Coefficients cv = Precompute(in.height, height, filter, false, limits);
  const int first = cv.bounds[w.top * 2];
  const int end = w.top + w.height - 1;
  const int last = cv.bounds[end * 2] + cv.bounds[end * 2 + 1];
  const size_t stride = static_cast<size_t>(w.width) * C;
  limits.Check(w.width, last - first, sizeof(double) * C, "the resized image");
  std::vector<double> temp(static_cast<size_t>(last - first) * stride);
  for (int y = first; y < last; y++) {
    const uint8_t* row = in.data.data() + static_cast<size_t>(y) * in.width * C;
    double* o = &temp[static_cast<size_t>(y - first) * stride];
    for (int xx = 0; xx < w.width; xx++) {
      const int xmin = ch.bounds[(xx + w.left) * 2], xmax = ch.bounds[(xx + w.left) * 2 + 1];
      const double* k = &ch.real[static_cast<size_t>(xx + w.left) * ch.ksize];
      for (int c = 0; c < C; c++) {
        double ss = 0;
        for (int x = 0; x < xmax; x++) ss += row[(xmin + x) * C + c] * k[x];
        o[xx * C + c] = ss;
      }
    }
  }
  for (int yy = 0; yy < w.height; yy++) {
    const int ymin = cv.bounds[(yy + w.top) * 2], ymax = cv.bounds[(yy + w.top) * 2 + 1];
    const double* k = &cv.real[static_cast<size_t>(yy + w.top) * cv.ksize];
    uint8_t* o = out.data.data() + static_cast<size_t>(yy) * stride;
    for (size_t i = 0; i < stride; i++) {
      double ss = 0;
      for (int y = 0; y < ymax; y++) ss += temp[static_cast<size_t>(ymin + y - first) * stride + i] * k[y];
      o[i] = static_cast<uint8_t>(std::nearbyint(std::min(255.0, std::max(0.0, ss))));
    }
  }
}

// Pillow's NEAREST resize (ImagingScaleAffine): source index = the position (x + 0.5) × scale,
// accumulated step by step as Pillow does, truncated.
std::vector<int> NearestIndex(int inSize, int outSize) {
  const double scale = static_cast<double>(inSize) / outSize;
  std::vector<int> index(outSize);
  double at = scale * 0.5;
  for (int i = 0; i < outSize; i++, at += scale) index[i] = std::min(inSize - 1, static_cast<int>(at));
  return index;
}

inline uint8_t Muldiv255(int a, int b) {
  const int t = a * b + 128;
  return static_cast<uint8_t>(((t >> 8) + t) >> 8);
}

// Pillow's RGBA → RGBa and RGBa → RGBA conversions.
void Premultiply(Pixels& px) {
  for (size_t i = 0; i < px.data.size(); i += 4) {
    uint8_t* p = &px.data[i];
    for (int ch = 0; ch < 3; ch++) p[ch] = Muldiv255(p[ch], p[3]);
  }
}

void Unpremultiply(Pixels& px) {
  for (size_t i = 0; i < px.data.size(); i += 4) {
    uint8_t* p = &px.data[i];
    const unsigned a = p[3];
    if (a == 0 || a == 255) continue;
    for (int ch = 0; ch < 3; ch++) p[ch] = static_cast<uint8_t>(std::min(255u, (255u * p[ch]) / a));
  }
}

}  // namespace

Pixels Resize(const Pixels& in, int width, int height, Filter filter, bool antialias, const Window& window,
              const Limits& limits) {
  const Window w = window.width > 0 ? window : Window{0, 0, width, height};
  limits.Check(width, height, 1, "the resized image");
  if (w.left < 0 || w.top < 0 || int64_t{w.left} + w.width > width || int64_t{w.top} + w.height > height) {
    throw ImageError("the resize window lies outside the resized image");
  }
  limits.Check(w.width, w.height, in.channels, "the resized image");
  Pixels out;
  out.width = w.width;
  out.height = w.height;
  out.channels = in.channels;
  out.data.resize(static_cast<size_t>(w.width) * w.height * in.channels);
  if (filter == Filter::kNearest) {
    const std::vector<int> xs = NearestIndex(in.width, width), ys = NearestIndex(in.height, height);
    const int c = in.channels;
    for (int y = 0; y < w.height; y++) {
      const uint8_t* row = in.data.data() + static_cast<size_t>(ys[y + w.top]) * in.width * c;
      uint8_t* o = out.data.data() + static_cast<size_t>(y) * w.width * c;
      for (int x = 0; x < w.width; x++) std::memcpy(o + x * c, row + xs[x + w.left] * c, c);
    }
    return out;
  }
  if (!antialias) {
    if (in.channels == 1) ResampleFloat<1>(in, width, height, w, out, filter, limits);
    else if (in.channels == 3) ResampleFloat<3>(in, width, height, w, out, filter, limits);
    else ResampleFloat<4>(in, width, height, w, out, filter, limits);
    return out;
  }
  switch (in.channels) {
    case 1:
      Resample<1>(in, width, height, w, out, filter, antialias, limits);
      break;
    case 3:
      Resample<3>(in, width, height, w, out, filter, antialias, limits);
      break;
    case 4: {
      // Pillow resizes RGBA premultiplied (as 'RGBa'), so transparent pixels lend no colour.
      Pixels pre = in;
      Premultiply(pre);
      Resample<4>(pre, width, height, w, out, filter, antialias, limits);
      Unpremultiply(out);
      break;
    }
    default:
      throw ImageError("an image has 1, 3 or 4 channels");
  }
  return out;
}

Pixels Crop(const Pixels& in, int top, int left, int height, int width, const Limits& limits) {
  limits.Check(width, height, in.channels, "the cropped image");
  const int c = in.channels;
  Pixels out;
  out.width = width;
  out.height = height;
  out.channels = c;
  out.data.assign(static_cast<size_t>(width) * height * c, 0);
  // The part of the region inside the image (in 64 bits: the offsets are the caller's).
  const int x0 = static_cast<int>(std::clamp<int64_t>(left, 0, in.width));
  const int x1 = static_cast<int>(std::clamp<int64_t>(int64_t{left} + width, 0, in.width));
  const int y0 = static_cast<int>(std::clamp<int64_t>(top, 0, in.height));
  const int y1 = static_cast<int>(std::clamp<int64_t>(int64_t{top} + height, 0, in.height));
  if (x0 >= x1) return out;
  for (int y = y0; y < y1; y++) {
    std::memcpy(out.data.data() + (static_cast<size_t>(y - top) * width + (x0 - left)) * c,
                in.data.data() + (static_cast<size_t>(y) * in.width + x0) * c, static_cast<size_t>(x1 - x0) * c);
  }
  return out;
}

Pixels Gray(const Pixels& in, int channels) {
  if (in.channels < 3) throw ImageError("grayscale conversion takes an RGB image");
  if (channels != 1 && channels != 3) throw ImageError("grayscale makes 1 or 3 channels");
  Pixels out;
  out.width = in.width;
  out.height = in.height;
  out.channels = channels;
  const size_t n = static_cast<size_t>(in.width) * in.height;
  out.data.resize(n * channels);
  for (size_t i = 0; i < n; i++) {
    const uint8_t* p = in.data.data() + i * in.channels;
    const uint8_t l = static_cast<uint8_t>((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
    for (int ch = 0; ch < channels; ch++) out.data[i * channels + ch] = l;
  }
  return out;
}

}  // namespace hearth::image
