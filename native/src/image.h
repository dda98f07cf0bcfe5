// Image decoding, resampling and encoding for hooks, with the pixels a PyTorch user's Python gets:
// libjpeg-turbo, libpng and libwebp decode as Pillow does (Image.open(...).convert('RGB')), and the
// resampling is Pillow's own (ImagingResample: separable filters, antialiased by the scale, 22-bit
// fixed point), which torchvision.transforms.Resize runs on a PIL image.
//
// No N-API here (image_js.cc is the binding). Every buffer is sized from dimensions checked against
// Limits first: an image's header is the caller's, and a 100-byte file may declare 4 billion pixels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace hearth::image {

// Rows top to bottom, channels interleaved (HWC): 1 = Pillow's 'L', 3 = 'RGB', 4 = 'RGBA'.
struct Pixels {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<uint8_t> data;
};

// The most any one buffer of a call may hold: pixels (width × height) and bytes.
struct Limits {
  int64_t maxPixels = 0;
  int64_t maxBytes = 0;
  // Throws ImageError (a limit) unless width × height × bytesPerPixel fits.
  void Check(int64_t width, int64_t height, int64_t bytesPerPixel, const char* what) const;
};

// The caller's bytes or request were wrong (not an image, truncated, past a limit): a 400.
struct ImageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Info {
  std::string format;  // "jpeg", "png", "webp"
  int width = 0;
  int height = 0;
};

// The format and size an encoded image declares, from its header alone.
Info Inspect(const uint8_t* bytes, size_t size);

// Decodes to `channels` (1, 3 or 4) as Pillow's convert() would give them; 4 keeps an alpha
// channel where the image has one (255 elsewhere).
Pixels Decode(const uint8_t* bytes, size_t size, int channels, const Limits& limits);

enum class Filter { kNearest, kBilinear, kBicubic };

// A region of an image: columns [left, left + width), rows [top, top + height).
struct Window {
  int left = 0;
  int top = 0;
  int width = 0;
  int height = 0;
};

// Pillow's Image.resize((width, height), filter): with `antialias` the filter widens with the
// scale (Pillow always does); without it the filter keeps its size (torch's interpolate,
// antialias=False). Only `window` of the resized image is made (all of it when its width is 0):
// a crop after a resize, without resampling what it drops, and the same bytes.
Pixels Resize(const Pixels& in, int width, int height, Filter filter, bool antialias, const Window& window,
              const Limits& limits);

// The region top/left/height/width; what lies outside the image is 0 (torchvision pads a crop
// larger than its image so).
Pixels Crop(const Pixels& in, int top, int left, int height, int width, const Limits& limits);

// Pillow's convert('L') (ITU-R 601-2 luma, 16-bit fixed point) from RGB or RGBA, repeated over
// `channels` (1, or 3 as torchvision's Grayscale(num_output_channels=3)).
Pixels Gray(const Pixels& in, int channels);

// JPEG (quality 1-100, 4:2:0 as Pillow's default) or PNG (zlib level 6, Pillow's default).
std::vector<uint8_t> Encode(const Pixels& in, const std::string& format, int quality);

}  // namespace hearth::image
