// parseJsonPacked (json.h): any JSON document for a hook's request.json, its arrays of numbers
// packed into one Float64Array for the isolate to rebuild.
#ifdef HEARTH_WITH_SIMDJSON

#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "json.h"
#include "json_dom.h"

namespace hearth {

using namespace json;  // NOLINT(google-build-using-namespace)

namespace {

// Bounds of a packed parse. It runs outside the isolate's memory cap and time limit, so a body
// that would make many JS values here, many packs, or much walking is left to JSON.parse in the
// isolate (within both) rather than made here.
constexpr int64_t kMaxValues = 65536;  // JS values made here: objects, strings, plain arrays' elements, path keys
constexpr uint32_t kMaxPacks = 1024;
constexpr size_t kMaxPackDepth = 32;
constexpr int64_t kWalksPerByte = 4;  // elements RectShape may visit, per byte of the body
// simdjson's array size() stops counting here (its tape keeps 24 bits).
constexpr int64_t kSaturatedSize = 0xFFFFFF;

// Whether `a` is rectangular with numbers for leaves (every list of a level as long as the others,
// all leaves at one depth, at least one leaf); its shape from `depth` on goes into `shape`.
// Each element visited takes one from `walks` (throws Differs once none are left).
bool RectShape(dom::array a, size_t depth, std::vector<int64_t>& shape, int64_t& leafDepth, int64_t& walks) {
  const int64_t n = static_cast<int64_t>(a.size());
  if (n >= kSaturatedSize) throw Differs{};
  if (depth == shape.size()) shape.push_back(n);
  else if (shape[depth] != n) return false;
  if (n == 0) return false;
  const bool leaves = IsNumber((*a.begin()).type());
  if (leaves) {
    if (leafDepth >= 0 && leafDepth != static_cast<int64_t>(depth)) return false;
    leafDepth = static_cast<int64_t>(depth);
  }
  for (dom::element e : a) {
    if (--walks < 0) throw Differs{};
    if (leaves) {
      if (!IsNumber(e.type())) return false;
    } else if (e.type() != dom::element_type::ARRAY ||
               !RectShape(e.get_array().value_unsafe(), depth + 1, shape, leafDepth, walks)) {
      return false;
    }
  }
  return leafDepth == static_cast<int64_t>(shape.size()) - 1;
}

// A document made into JS values, with each rectangular array of numbers of at least `minLeaves`
// leaves left as null and its numbers appended to `numbers`; `packs` says where each was:
// [path (keys and indexes from the top), offset into numbers, shape].
struct Packer {
  Napi::Env env;
  size_t minLeaves;
  int64_t walks;
  std::vector<double> numbers;
  Napi::Array packs = Napi::Array::New(env);
  std::vector<Napi::Value> path;
  int64_t values = kMaxValues;

  // Takes n from the values this parse may make; past them, the body is JSON.parse's.
  void Spend(int64_t n) {
    values -= n;
    if (values < 0) throw Differs{};
  }

  Napi::Value Pack(dom::array a) {
    if (path.size() > kMaxPackDepth) return Napi::Value();
    std::vector<int64_t> shape;
    int64_t leafDepth = -1;
    if (!RectShape(a, 0, shape, leafDepth, walks)) return Napi::Value();
    int64_t leaves = 1;
    for (int64_t d : shape) leaves *= d;
    if (static_cast<size_t>(leaves) < minLeaves) return Napi::Value();
    if (packs.Length() >= kMaxPacks) throw Differs{};
    Spend(static_cast<int64_t>(path.size() + shape.size()) + 2);
    const size_t at = numbers.size();
    numbers.resize(at + static_cast<size_t>(leaves));
    double* to = numbers.data() + at;
    FillLeaves(a, to);
    Napi::Array where = Napi::Array::New(env, path.size());
    for (uint32_t i = 0; i < path.size(); ++i) where.Set(i, path[i]);
    Napi::Array dims = Napi::Array::New(env, shape.size());
    for (uint32_t i = 0; i < shape.size(); ++i) dims.Set(i, Napi::Number::New(env, static_cast<double>(shape[i])));
    Napi::Array pack = Napi::Array::New(env, 3);
    pack.Set(0u, where);
    pack.Set(1u, Napi::Number::New(env, static_cast<double>(at)));
    pack.Set(2u, dims);
    packs.Set(packs.Length(), pack);
    return env.Null();
  }

  Napi::Value ToJs(dom::element e) {
    switch (e.type()) {
      case dom::element_type::OBJECT: {
        // A key that comes again: JSON.parse keeps its last value, but a pack made for an
        // earlier one would still be put at its path. Rare enough to leave to JSON.parse.
        std::unordered_set<std::string_view> keys;
        return ObjectToJs(env, e, [&](Napi::String key, dom::key_value_pair field) {
          if (!keys.insert(field.key).second) throw Differs{};
          Spend(2);
          path.push_back(key);
          Napi::Value value = ToJs(field.value);
          path.pop_back();
          return value;
        });
      }
      case dom::element_type::ARRAY: {
        const dom::array a = e.get_array().value_unsafe();
        Napi::Value packed = Pack(a);
        if (!packed.IsEmpty()) return packed;
        Spend(static_cast<int64_t>(a.size()) + 1);
        Napi::Array out = Napi::Array::New(env, a.size());
        uint32_t i = 0;
        for (dom::element child : a) {
          path.push_back(Napi::Number::New(env, i));
          out.Set(i++, ToJs(child));
          path.pop_back();
        }
        return out;
      }
      default:
        return ScalarToJs(env, e);
    }
  }
};

}  // namespace

Napi::Value ParseJsonPacked(const Napi::CallbackInfo& info) {
  Napi::Uint8Array bytes = BytesArg(info, "parseJsonPacked");
  const size_t minLeaves = info[1].IsNumber() ? std::max<int64_t>(1, info[1].As<Napi::Number>().Int64Value()) : 16;
  Napi::Env env = info.Env();
  Parse parse;
  parse.Run(bytes.Data(), bytes.ByteLength());
  // undefined where JSON.parse must read the body (too deep included: the caller's JSON.parse runs
  // where it has a time limit).
  try {
    return parse.Made(env, [&]() -> Napi::Value {
      Packer packer{env, minLeaves, kWalksPerByte * static_cast<int64_t>(bytes.ByteLength()) + 1024};
      Napi::Value value = packer.ToJs(parse.doc);
      Napi::Float64Array numbers = Napi::Float64Array::New(env, packer.numbers.size());
      if (!packer.numbers.empty())
        std::memcpy(numbers.Data(), packer.numbers.data(), packer.numbers.size() * sizeof(double));
      Napi::Object result = Napi::Object::New(env);
      result.Set("value", value);
      result.Set("numbers", numbers);
      result.Set("packs", packer.packs);
      return result;
    });
  } catch (const Napi::Error&) {
    // The thread's heap refused a value (or the thread is ending): JSON.parse's, in the isolate.
    return env.Undefined();
  }
}

}  // namespace hearth

#endif  // HEARTH_WITH_SIMDJSON
