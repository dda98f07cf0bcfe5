// Decoding and encoding: JPEG (libjpeg-turbo), PNG (libpng), WebP (libwebp), with Pillow's
// conversions to 'RGB' and 'L' where the libraries' own would differ.
#include <algorithm>
#include <climits>
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

// jpeglib.h uses size_t and FILE without including their headers.
#include <jpeglib.h>
#include <jerror.h>
#include <png.h>
#include <webp/decode.h>

#include "image.h"

namespace hearth::image {

void Limits::Check(int64_t width, int64_t height, int64_t bytesPerPixel, const char* what) const {
  if (width <= 0 || height <= 0) {
    throw ImageError(std::string(what) + " has no pixels (" + std::to_string(width) + "×" +
                     std::to_string(height) + ")");
  }
  const int64_t pixels = width * height;
  if (pixels > maxPixels) {
    throw ImageError(std::string(what) + " would be " + std::to_string(width) + "×" + std::to_string(height) +
                     " pixels, more than the " + std::to_string(maxPixels) + " an image may have here");
  }
  if (pixels * bytesPerPixel > maxBytes) {
    throw ImageError(std::string(what) + " would take " + std::to_string(pixels * bytesPerPixel) +
                     " bytes, more than the hook's memory allows (" + std::to_string(maxBytes) + ")");
  }
}

namespace {

bool IsJpeg(const uint8_t* b, size_t n) { return n >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff; }
bool IsPng(const uint8_t* b, size_t n) { return n >= 8 && png_sig_cmp(b, 0, 8) == 0; }
bool IsWebp(const uint8_t* b, size_t n) {
  return n >= 12 && std::memcmp(b, "RIFF", 4) == 0 && std::memcmp(b + 8, "WEBP", 4) == 0;
}

// Pillow's convert('L') from RGB(A): ITU-R 601-2 luma in 16-bit fixed point, rounded.
inline uint8_t Luma(const uint8_t* p) { return (p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16; }

// Rewrites RGB(A) rows in place (the buffer already holds width × height × from bytes) as `to`
// channels: 1 luma, 3 RGB, 4 RGBA.
void Narrow(Pixels& px, int from, int to) {
  if (from == to) return;
  const size_t n = static_cast<size_t>(px.width) * px.height;
  uint8_t* d = px.data.data();
  for (size_t i = 0; i < n; i++) {
    const uint8_t* s = d + i * from;
    uint8_t* o = d + i * to;
    if (to == 1) {
      o[0] = Luma(s);
    } else {
      const uint8_t r = s[0], g = s[1], b = s[2];
      o[0] = r, o[1] = g, o[2] = b;
    }
  }
  px.data.resize(n * to);
  px.channels = to;
}

// ---- JPEG ----------------------------------------------------------------------------------

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void JpegExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  // libjpeg's way of saying its buffers would pass max_memory_to_use.
  if (cinfo->err->msg_code == JERR_NO_BACKING_STORE) {
    std::snprintf(err->message, JMSG_LENGTH_MAX, "it needs more memory than the hook's memory allows");
  }
  std::longjmp(err->jump, 1);
}

// Warnings are ignored as Pillow ignores them, but a file that ends early is an error there
// ("image file is truncated"), and here.
void JpegMessage(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) cinfo->err->error_exit(cinfo);
}

// A progressive JPEG may hold thousands of scans, each a pass over the whole image: a few KB that
// take minutes to decode. TurboJPEG's TJFLAG_LIMITSCANS stops at 500; so does this.
constexpr int kMaxScans = 500;

void JpegProgress(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->is_decompressor && d->progressive_mode && d->input_scan_number > kMaxScans) {
    std::snprintf(reinterpret_cast<JpegError*>(cinfo->err)->message, JMSG_LENGTH_MAX,
                  "the JPEG has more than %d scans", kMaxScans);
    std::longjmp(reinterpret_cast<JpegError*>(cinfo->err)->jump, 2);
  }
}

// A decompressor over `bytes`, destroyed with it; the caller calls setjmp on `err.jump` first.
struct JpegReader {
  jpeg_decompress_struct cinfo{};
  JpegError err{};
  jpeg_progress_mgr progress{};
  JpegReader() {
    cinfo.err = jpeg_std_error(&err.mgr);
    err.mgr.error_exit = JpegExit;
    err.mgr.emit_message = JpegMessage;
    jpeg_create_decompress(&cinfo);
    progress.progress_monitor = JpegProgress;
    cinfo.progress = &progress;
  }
  ~JpegReader() { jpeg_destroy_decompress(&cinfo); }
};

// Pillow's cmyk2rgb, after its 'CMYK;I' unpacking of Adobe's inverted CMYK.
inline uint8_t Muldiv255(int a, int b) {
  const int t = a * b + 128;
  return static_cast<uint8_t>(((t >> 8) + t) >> 8);
}

Pixels DecodeJpeg(const uint8_t* bytes, size_t size, int channels, const Limits& limits, Info* info) {
  JpegReader r;
  Pixels px;
  if (setjmp(r.err.jump)) throw ImageError(std::string("the JPEG does not decode: ") + r.err.message);
  jpeg_mem_src(&r.cinfo, bytes, static_cast<unsigned long>(size));
  jpeg_read_header(&r.cinfo, TRUE);
  if (info) {
    info->format = "jpeg";
    info->width = static_cast<int>(r.cinfo.image_width);
    info->height = static_cast<int>(r.cinfo.image_height);
    return px;
  }
  const bool cmyk = r.cinfo.num_components == 4;
  const int work = cmyk ? 4 : (channels == 4 ? 4 : 3);
  limits.Check(r.cinfo.image_width, r.cinfo.image_height, work, "the decoded image");
  // libjpeg's own buffers (a progressive image's coefficients: as large as its pixels) get what
  // the pixels leave of the limit (0 would mean no limit).
  const int64_t pixelBytes = int64_t{r.cinfo.image_width} * r.cinfo.image_height * work;
  r.cinfo.mem->max_memory_to_use = static_cast<long>(std::clamp<int64_t>(limits.maxBytes - pixelBytes, 1, LONG_MAX));
  r.cinfo.out_color_space = cmyk ? JCS_CMYK : (work == 4 ? JCS_EXT_RGBA : JCS_RGB);
  jpeg_start_decompress(&r.cinfo);
  px.width = static_cast<int>(r.cinfo.output_width);
  px.height = static_cast<int>(r.cinfo.output_height);
  px.channels = work;
  const size_t stride = static_cast<size_t>(px.width) * work;
  px.data.resize(stride * px.height);
  while (r.cinfo.output_scanline < r.cinfo.output_height) {
    JSAMPROW row = px.data.data() + stride * r.cinfo.output_scanline;
    jpeg_read_scanlines(&r.cinfo, &row, 1);
  }
  jpeg_finish_decompress(&r.cinfo);
  if (cmyk) {
    const bool inverted = r.cinfo.saw_Adobe_marker;
    const size_t n = static_cast<size_t>(px.width) * px.height;
    for (size_t i = 0; i < n; i++) {
      uint8_t* p = px.data.data() + i * 4;
      int c = p[0], m = p[1], y = p[2], k = p[3];
      if (inverted) c = 255 - c, m = 255 - m, y = 255 - y, k = 255 - k;
      const int nk = 255 - k;
      p[0] = static_cast<uint8_t>(nk - Muldiv255(c, nk));
      p[1] = static_cast<uint8_t>(nk - Muldiv255(m, nk));
      p[2] = static_cast<uint8_t>(nk - Muldiv255(y, nk));
      p[3] = 255;
    }
  }
  Narrow(px, work, channels);
  return px;
}

// ---- PNG -----------------------------------------------------------------------------------

struct PngSource {
  const uint8_t* bytes;
  size_t size;
  size_t at;
};

void PngRead(png_structp png, png_bytep out, png_size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->at) png_error(png, "the PNG ends before its last chunk");
  std::memcpy(out, src->bytes + src->at, n);
  src->at += n;
}

void PngFail(png_structp png, png_const_charp message) {
  auto* text = static_cast<std::string*>(png_get_error_ptr(png));
  *text = message;
  png_longjmp(png, 1);
}

void PngWarn(png_structp, png_const_charp) {}

// A reader and its info, destroyed with it; the caller calls setjmp on png_jmpbuf(png) first.
struct PngReadState {
  std::string failure;
  png_structp png = nullptr;
  png_infop info = nullptr;
  PngReadState() {
    png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &failure, PngFail, PngWarn);
    if (!png) throw std::bad_alloc();
    info = png_create_info_struct(png);
  }
  ~PngReadState() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

Pixels DecodePng(const uint8_t* bytes, size_t size, int channels, const Limits& limits, Info* info) {
  PngReadState r;
  PngSource src{bytes, size, 0};
  Pixels px;
  std::vector<png_bytep> rows;
  png_structp png = r.png;
  png_infop pinfo = r.info;
  if (setjmp(png_jmpbuf(png))) throw ImageError("the PNG does not decode: " + r.failure);
  if (!pinfo) png_error(png, "out of memory");
  png_set_read_fn(png, &src, PngRead);
  png_read_info(png, pinfo);
  const png_uint_32 width = png_get_image_width(png, pinfo);
  const png_uint_32 height = png_get_image_height(png, pinfo);
  if (info) {
    info->format = "png";
    info->width = static_cast<int>(width);
    info->height = static_cast<int>(height);
    return px;
  }
  const int type = png_get_color_type(png, pinfo);
  const bool alpha = (type & PNG_COLOR_MASK_ALPHA) != 0 || png_get_valid(png, pinfo, PNG_INFO_tRNS);
  const int work = channels == 4 ? 4 : 3;
  limits.Check(width, height, work, "the decoded image");
  // Pillow keeps 16-bit samples' high byte, expands low bit depths and palettes, and drops alpha in
  // convert('RGB') (no compositing, no gamma).
  png_set_strip_16(png);
  png_set_packing(png);
  if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (type == PNG_COLOR_TYPE_GRAY || type == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_expand_gray_1_2_4_to_8(png);
    png_set_gray_to_rgb(png);
  }
  if (work == 4 && alpha) {
    png_set_tRNS_to_alpha(png);
  } else if (work == 4) {
    png_set_filler(png, 0xff, PNG_FILLER_AFTER);
  } else {
    png_set_strip_alpha(png);
  }
  png_set_interlace_handling(png);
  png_read_update_info(png, pinfo);
  if (png_get_rowbytes(png, pinfo) != static_cast<size_t>(width) * work) png_error(png, "unexpected row layout");
  px.width = static_cast<int>(width);
  px.height = static_cast<int>(height);
  px.channels = work;
  px.data.resize(static_cast<size_t>(width) * height * work);
  rows.resize(height);
  for (png_uint_32 y = 0; y < height; y++) rows[y] = px.data.data() + static_cast<size_t>(y) * width * work;
  png_read_image(png, rows.data());
  Narrow(px, work, channels);
  return px;
}

// ---- WebP ----------------------------------------------------------------------------------

Pixels DecodeWebp(const uint8_t* bytes, size_t size, int channels, const Limits& limits, Info* info) {
  WebPBitstreamFeatures features;
  if (WebPGetFeatures(bytes, size, &features) != VP8_STATUS_OK) throw ImageError("the WebP does not decode");
  if (info) {
    info->format = "webp";
    info->width = features.width;
    info->height = features.height;
    return {};
  }
  if (features.has_animation) throw ImageError("animated WebP images are not decoded; send one frame");
  const int work = channels == 4 ? 4 : 3;
  limits.Check(features.width, features.height, work, "the decoded image");
  Pixels px;
  px.width = features.width;
  px.height = features.height;
  px.channels = work;
  px.data.resize(static_cast<size_t>(px.width) * px.height * work);
  const int stride = px.width * work;
  const uint8_t* ok = work == 4 ? WebPDecodeRGBAInto(bytes, size, px.data.data(), px.data.size(), stride)
                                : WebPDecodeRGBInto(bytes, size, px.data.data(), px.data.size(), stride);
  if (!ok) throw ImageError("the WebP does not decode");
  Narrow(px, work, channels);
  return px;
}

using Decoder = Pixels (*)(const uint8_t*, size_t, int, const Limits&, Info*);

Decoder Pick(const uint8_t* bytes, size_t size) {
  if (IsJpeg(bytes, size)) return DecodeJpeg;
  if (IsPng(bytes, size)) return DecodePng;
  if (IsWebp(bytes, size)) return DecodeWebp;
  throw ImageError("the body is not a JPEG, PNG or WebP image");
}

// ---- Encoding ------------------------------------------------------------------------------

std::vector<uint8_t> EncodeJpeg(const Pixels& in, int quality) {
  if (in.channels == 4) throw ImageError("JPEG has no alpha channel: encode 1 or 3 channels, or PNG");
  jpeg_compress_struct cinfo{};
  JpegError err{};
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = JpegExit;
  unsigned char* out = nullptr;
  unsigned long outSize = 0;
  jpeg_create_compress(&cinfo);
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    std::free(out);
    throw ImageError(std::string("the JPEG does not encode: ") + err.message);
  }
  jpeg_mem_dest(&cinfo, &out, &outSize);
  cinfo.image_width = static_cast<JDIMENSION>(in.width);
  cinfo.image_height = static_cast<JDIMENSION>(in.height);
  cinfo.input_components = in.channels;
  cinfo.in_color_space = in.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const size_t stride = static_cast<size_t>(in.width) * in.channels;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(in.data.data()) + stride * cinfo.next_scanline;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::vector<uint8_t> bytes(out, out + outSize);
  jpeg_destroy_compress(&cinfo);
  std::free(out);
  return bytes;
}

void PngWrite(png_structp png, png_bytep data, png_size_t n) {
  auto* out = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + n);
}

std::vector<uint8_t> EncodePng(const Pixels& in) {
  std::string failure;
  std::vector<uint8_t> out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &failure, PngFail, PngWarn);
  if (!png) throw std::bad_alloc();
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw ImageError("the PNG does not encode: " + failure);
  }
  if (!info) png_error(png, "out of memory");
  png_set_write_fn(png, &out, PngWrite, nullptr);
  const int type = in.channels == 1 ? PNG_COLOR_TYPE_GRAY
                   : in.channels == 3 ? PNG_COLOR_TYPE_RGB
                                      : PNG_COLOR_TYPE_RGB_ALPHA;
  png_set_IHDR(png, info, static_cast<png_uint_32>(in.width), static_cast<png_uint_32>(in.height), 8, type,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, 6);
  png_write_info(png, info);
  const size_t stride = static_cast<size_t>(in.width) * in.channels;
  for (int y = 0; y < in.height; y++) png_write_row(png, in.data.data() + stride * y);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

}  // namespace

Info Inspect(const uint8_t* bytes, size_t size) {
  Info info;
  Pick(bytes, size)(bytes, size, 3, Limits{}, &info);
  return info;
}

Pixels Decode(const uint8_t* bytes, size_t size, int channels, const Limits& limits) {
  if (channels != 1 && channels != 3 && channels != 4) throw ImageError("an image decodes to 1, 3 or 4 channels");
  return Pick(bytes, size)(bytes, size, channels, limits, nullptr);
}

std::vector<uint8_t> Encode(const Pixels& in, const std::string& format, int quality) {
  if (in.channels != 1 && in.channels != 3 && in.channels != 4) throw ImageError("an image has 1, 3 or 4 channels");
  if (format == "jpeg") return EncodeJpeg(in, quality);
  if (format == "png") return EncodePng(in);
  throw ImageError("images encode as jpeg or png, not " + format);
}

}  // namespace hearth::image
