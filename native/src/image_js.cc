// The image functions as JS sees them: imageInspect, imageRun (decode and a list of steps in one
// call, so no intermediate image crosses into JS) and imageEncode. Synchronous: they run on the
// calling thread, which is a hook thread, never the event loop.
#include "image_js.h"

#include <cstring>

#include "common.h"
#include "image.h"

namespace hearth {

namespace {

using image::ImageError;
using image::Limits;
using image::Pixels;

int IntField(const Napi::Object& o, const char* name) {
  const Napi::Value v = o.Get(name);
  if (!v.IsNumber()) throw ImageError(std::string("the image step's ") + name + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= -2147483648.0 && d <= 2147483647.0) || d != static_cast<int>(d)) {
    throw ImageError(std::string("the image step's ") + name + " must be an integer");
  }
  return static_cast<int>(d);
}

std::string StringField(const Napi::Object& o, const char* name) {
  const Napi::Value v = o.Get(name);
  return v.IsString() ? v.As<Napi::String>().Utf8Value() : std::string();
}

// A TypedArray's bytes (any view of an ArrayBuffer).
std::pair<const uint8_t*, size_t> Bytes(const Napi::Value& v, const char* what) {
  if (!v.IsTypedArray()) throw ImageError(std::string(what) + " must be a Uint8Array");
  const Napi::TypedArray t = v.As<Napi::TypedArray>();
  const auto* data = static_cast<const uint8_t*>(t.ArrayBuffer().Data()) + t.ByteOffset();
  return {data, t.ByteLength()};
}

// {width, height, channels, data} from JS, checked against its data's length.
Pixels ReadPixels(const Napi::Object& o, const Limits& limits) {
  Pixels px;
  px.width = IntField(o, "width");
  px.height = IntField(o, "height");
  px.channels = IntField(o, "channels");
  if (px.channels != 1 && px.channels != 3 && px.channels != 4) throw ImageError("an image has 1, 3 or 4 channels");
  limits.Check(px.width, px.height, px.channels, "the image");
  auto [data, size] = Bytes(o.Get("data"), "an image's data");
  if (size != static_cast<size_t>(px.width) * px.height * px.channels) {
    throw ImageError("an image's data must hold width × height × channels bytes");
  }
  px.data.assign(data, data + size);
  return px;
}

Napi::Object WritePixels(Napi::Env env, const Pixels& px) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("width", px.width);
  o.Set("height", px.height);
  o.Set("channels", px.channels);
  Napi::Uint8Array data = Napi::Uint8Array::New(env, px.data.size());
  std::memcpy(data.Data(), px.data.data(), px.data.size());
  o.Set("data", data);
  return o;
}

image::Filter ParseFilter(const std::string& name) {
  if (name == "bilinear") return image::Filter::kBilinear;
  if (name == "bicubic") return image::Filter::kBicubic;
  if (name == "nearest") return image::Filter::kNearest;
  throw ImageError("interpolation is nearest, bilinear or bicubic, not " + name);
}

std::vector<float> Floats(const Napi::Value& v, size_t channels, const char* what, float fallback) {
  std::vector<float> out(channels, fallback);
  if (v.IsUndefined()) return out;
  if (!v.IsArray()) throw ImageError(std::string(what) + " must be an array of numbers");
  const Napi::Array a = v.As<Napi::Array>();
  if (a.Length() != 1 && a.Length() != channels) {
    throw ImageError(std::string(what) + " needs one number or one per channel (" + std::to_string(channels) + ")");
  }
  for (size_t i = 0; i < channels; i++) {
    const Napi::Value x = a.Get(static_cast<uint32_t>(a.Length() == 1 ? 0 : i));
    if (!x.IsNumber()) throw ImageError(std::string(what) + " must be an array of numbers");
    out[i] = static_cast<float>(x.As<Napi::Number>().DoubleValue());
  }
  return out;
}

// torchvision's ToTensor (÷255 to [0, 1]) then Normalize ((x − mean) ÷ std, in float32 as torch
// computes it), or PILToTensor (the bytes as UINT8); channels first or last.
Napi::Object Tensor(Napi::Env env, const Pixels& px, const Napi::Object& step, const Limits& limits) {
  const std::string layout = StringField(step, "layout");
  const std::string dtype = StringField(step, "dtype");
  if (layout != "CHW" && layout != "HWC") throw ImageError("a tensor's layout is CHW or HWC");
  if (dtype != "FP32" && dtype != "UINT8") throw ImageError("an image tensor is FP32 or UINT8");
  const bool chw = layout == "CHW";
  const size_t c = px.channels, hw = static_cast<size_t>(px.width) * px.height;
  Napi::Array shape = Napi::Array::New(env, 3);
  shape.Set(0u, chw ? px.channels : px.height);
  shape.Set(1u, chw ? px.height : px.width);
  shape.Set(2u, chw ? px.width : px.channels);
  Napi::Object out = Napi::Object::New(env);
  out.Set("dtype", dtype);
  out.Set("shape", shape);
  if (dtype == "UINT8") {
    Napi::Uint8Array data = Napi::Uint8Array::New(env, hw * c);
    if (!chw) {
      std::memcpy(data.Data(), px.data.data(), hw * c);
    } else {
      for (size_t i = 0; i < hw; i++)
        for (size_t ch = 0; ch < c; ch++) data[ch * hw + i] = px.data[i * c + ch];
    }
    out.Set("data", data);
    return out;
  }
  limits.Check(px.width, px.height, 4 * px.channels, "the image tensor");
  const std::vector<float> mean = Floats(step.Get("mean"), c, "mean", 0.0f);
  const std::vector<float> std = Floats(step.Get("std"), c, "std", 1.0f);
  for (float s : std)
    if (s == 0.0f) throw ImageError("std must not be 0");
  // The 256 values each channel's bytes can take, computed as torch computes each element.
  std::vector<float> table(256 * c);
  for (size_t ch = 0; ch < c; ch++)
    for (int v = 0; v < 256; v++) table[ch * 256 + v] = (static_cast<float>(v) / 255.0f - mean[ch]) / std[ch];
  Napi::Float32Array data = Napi::Float32Array::New(env, hw * c);
  float* d = data.Data();
  const uint8_t* p = px.data.data();
  if (chw) {
    for (size_t ch = 0; ch < c; ch++) {
      const float* t = &table[ch * 256];
      float* o = d + ch * hw;
      for (size_t i = 0; i < hw; i++) o[i] = t[p[i * c + ch]];
    }
  } else {
    for (size_t i = 0; i < hw * c; i++) d[i] = table[(i % c) * 256 + p[i]];
  }
  out.Set("data", data);
  return out;
}

Limits ReadLimits(const Napi::CallbackInfo& info, size_t at) {
  Limits limits;
  if (!info[at].IsNumber() || !info[at + 1].IsNumber()) throw ImageError("image limits must be numbers");
  limits.maxPixels = info[at].As<Napi::Number>().Int64Value();
  limits.maxBytes = info[at + 1].As<Napi::Number>().Int64Value();
  return limits;
}

template <typename F>
Napi::Value Run(const Napi::CallbackInfo& info, F&& body) {
  try {
    return body();
  } catch (const ImageError& e) {
    throw MakeError(info.Env(), code::kImage, e.what());
  } catch (const std::bad_alloc&) {
    throw MakeError(info.Env(), code::kImage, "out of memory for the image");
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::exception& e) {
    // Nothing may reach std::terminate from a JS entry point.
    throw MakeError(info.Env(), code::kInvalidArgument, e.what());
  }
}

Napi::Value ImageInspect(const Napi::CallbackInfo& info) {
  return Run(info, [&]() -> Napi::Value {
    auto [data, size] = Bytes(info[0], "the image");
    const image::Info i = image::Inspect(data, size);
    Napi::Object o = Napi::Object::New(info.Env());
    o.Set("format", i.format);
    o.Set("width", i.width);
    o.Set("height", i.height);
    return o;
  });
}

// imageRun(input, steps, maxPixels, maxBytes): input is encoded bytes (the first step decodes
// them) or {width, height, channels, data}; the last step may make a tensor.
Napi::Value ImageRun(const Napi::CallbackInfo& info) {
  return Run(info, [&]() -> Napi::Value {
    Napi::Env env = info.Env();
    const Limits limits = ReadLimits(info, 2);
    if (!info[1].IsArray()) throw ImageError("the image steps must be an array");
    const Napi::Array steps = info[1].As<Napi::Array>();
    Pixels px;
    uint32_t i = 0;
    if (info[0].IsTypedArray()) {
      if (steps.Length() == 0 || !steps.Get(0u).IsObject() ||
          StringField(steps.Get(0u).As<Napi::Object>(), "op") != "decode") {
        throw ImageError("encoded bytes are decoded first");
      }
      auto [data, size] = Bytes(info[0], "the image");
      px = image::Decode(data, size, IntField(steps.Get(0u).As<Napi::Object>(), "channels"), limits);
      i = 1;
    } else if (info[0].IsObject()) {
      px = ReadPixels(info[0].As<Napi::Object>(), limits);
    } else {
      throw ImageError("an image is encoded bytes or {width, height, channels, data}");
    }
    for (; i < steps.Length(); i++) {
      if (!steps.Get(i).IsObject()) throw ImageError("an image step is an object");
      const Napi::Object step = steps.Get(i).As<Napi::Object>();
      const std::string op = StringField(step, "op");
      if (op == "resize") {
        image::Window window;
        if (step.Get("window").IsObject()) {
          const Napi::Object w = step.Get("window").As<Napi::Object>();
          window = {IntField(w, "left"), IntField(w, "top"), IntField(w, "width"), IntField(w, "height")};
          if (window.width <= 0 || window.height <= 0) throw ImageError("a resize window has pixels");
        }
        px = image::Resize(px, IntField(step, "width"), IntField(step, "height"),
                           ParseFilter(StringField(step, "filter")), step.Get("antialias").ToBoolean(), window, limits);
      } else if (op == "crop") {
        px = image::Crop(px, IntField(step, "top"), IntField(step, "left"), IntField(step, "height"),
                         IntField(step, "width"), limits);
      } else if (op == "gray") {
        px = image::Gray(px, IntField(step, "channels"));
      } else if (op == "tensor") {
        if (i + 1 != steps.Length()) throw ImageError("the tensor step comes last");
        return Tensor(env, px, step, limits);
      } else {
        throw ImageError("unknown image step " + op);
      }
    }
    return WritePixels(env, px);
  });
}

// imageEncode({width, height, channels, data}, format, quality).
Napi::Value ImageEncode(const Napi::CallbackInfo& info) {
  return Run(info, [&]() -> Napi::Value {
    if (!info[0].IsObject()) throw ImageError("encode takes {width, height, channels, data}");
    const Limits limits{INT64_MAX, INT64_MAX};
    const Pixels px = ReadPixels(info[0].As<Napi::Object>(), limits);
    const std::string format = info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "";
    const int quality = info[2].IsNumber() ? info[2].As<Napi::Number>().Int32Value() : 75;
    if (quality < 1 || quality > 100) throw ImageError("JPEG quality is 1 to 100");
    const std::vector<uint8_t> bytes = image::Encode(px, format, quality);
    Napi::Uint8Array out = Napi::Uint8Array::New(info.Env(), bytes.size());
    std::memcpy(out.Data(), bytes.data(), bytes.size());
    return out;
  });
}

}  // namespace

void RegisterImage(Napi::Env env, Napi::Object exports) {
  exports.Set("imageInspect", Napi::Function::New<ImageInspect>(env, "imageInspect"));
  exports.Set("imageRun", Napi::Function::New<ImageRun>(env, "imageRun"));
  exports.Set("imageEncode", Napi::Function::New<ImageEncode>(env, "imageEncode"));
}

}  // namespace hearth
