#include "json.h"

#ifdef HEARTH_WITH_SIMDJSON

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common.h"

namespace hearth {

namespace {

namespace dom = simdjson::dom;

// Where simdjson's value would differ from JSON.parse's: the caller falls back.
struct Differs {};

// Parsers that have read documents up to this size are kept for the next (Parsers): enough for a
// 1×3×224×224 image as JSON (~3 MB). A parser holds several times its capacity (the padded copy,
// structural indexes, the tape, strings), so kept ones are few and small.
constexpr size_t kKeptParserBytes = 4u << 20;

double NumberOf(dom::element e) {
  switch (e.type()) {
    case dom::element_type::INT64:
      return static_cast<double>(e.get_int64().value_unsafe());
    case dom::element_type::UINT64:
      return static_cast<double>(e.get_uint64().value_unsafe());
    default:
      return e.get_double().value_unsafe();
  }
}

bool IsNumber(dom::element_type t) {
  return t == dom::element_type::INT64 || t == dom::element_type::UINT64 || t == dom::element_type::DOUBLE;
}

// The count of an array's leaves at any depth when every leaf is a number; -1 otherwise.
int64_t NumericLeaves(dom::array a) {
  int64_t n = 0;
  for (dom::element e : a) {
    if (IsNumber(e.type())) {
      ++n;
    } else if (e.type() == dom::element_type::ARRAY) {
      const int64_t inner = NumericLeaves(e.get_array().value_unsafe());
      if (inner < 0) return -1;
      n += inner;
    } else {
      return -1;
    }
  }
  return n;
}

void FillLeaves(dom::array a, double*& out) {
  for (dom::element e : a) {
    if (e.type() == dom::element_type::ARRAY)
      FillLeaves(e.get_array().value_unsafe(), out);
    else
      *out++ = NumberOf(e);
  }
}

// Where a value sits: only `inputs[i].data` of the top-level object is packed.
enum class At { kTop, kInputs, kInput, kData, kOther };

At Inside(At parent, std::string_view key) {
  if (parent == At::kTop && key == "inputs") return At::kInputs;
  if (parent == At::kInput && key == "data") return At::kData;
  return At::kOther;
}

// An object as JSON.parse makes it, each field's value made by `field(key, field)`.
template <typename Field>
Napi::Object ObjectToJs(Napi::Env env, dom::element e, Field field) {
  Napi::Object out = Napi::Object::New(env);
  const dom::object object = e.get_object().value_unsafe();
  for (dom::key_value_pair kv : object) {
    // JSON.parse makes "__proto__" an own property; setting it here would set the prototype.
    if (kv.key == "__proto__") throw Differs{};
    Napi::String key = Napi::String::New(env, kv.key.data(), kv.key.size());
    out.Set(key, field(key, kv));
  }
  return out;
}

Napi::Value ToJs(Napi::Env env, dom::element e, At at) {
  switch (e.type()) {
    case dom::element_type::OBJECT:
      return ObjectToJs(env, e, [&](Napi::String, dom::key_value_pair field) {
        return ToJs(env, field.value, Inside(at, field.key));
      });
    case dom::element_type::ARRAY: {
      const dom::array a = e.get_array().value_unsafe();
      if (at == At::kData) {
        const int64_t leaves = NumericLeaves(a);
        if (leaves > 0) {
          Napi::Float64Array packed = Napi::Float64Array::New(env, static_cast<size_t>(leaves));
          double* to = packed.Data();
          FillLeaves(a, to);
          return packed;
        }
      }
      Napi::Array out = Napi::Array::New(env, a.size());
      uint32_t i = 0;
      for (dom::element child : a) out.Set(i++, ToJs(env, child, at == At::kInputs ? At::kInput : At::kOther));
      return out;
    }
    case dom::element_type::STRING: {
      std::string_view s = e.get_string().value_unsafe();
      return Napi::String::New(env, s.data(), s.size());
    }
    case dom::element_type::INT64:
    case dom::element_type::UINT64:
    case dom::element_type::DOUBLE:
      return Napi::Number::New(env, NumberOf(e));
    case dom::element_type::BOOL:
      return Napi::Boolean::New(env, e.get_bool().value_unsafe());
    case dom::element_type::NULL_VALUE:
    default:
      return env.Null();
  }
}

// Whether `a` is rectangular with numbers for leaves (every list of a level as long as the others,
// all leaves at one depth, at least one leaf); its shape from `depth` on goes into `shape`.
bool RectShape(dom::array a, size_t depth, std::vector<int64_t>& shape, int64_t& leafDepth) {
  const int64_t n = static_cast<int64_t>(a.size());
  if (depth == shape.size()) shape.push_back(n);
  else if (shape[depth] != n) return false;
  if (n == 0) return false;
  const bool leaves = IsNumber((*a.begin()).type());
  if (leaves) {
    if (leafDepth >= 0 && leafDepth != static_cast<int64_t>(depth)) return false;
    leafDepth = static_cast<int64_t>(depth);
  }
  for (dom::element e : a) {
    if (leaves) {
      if (!IsNumber(e.type())) return false;
    } else if (e.type() != dom::element_type::ARRAY ||
               !RectShape(e.get_array().value_unsafe(), depth + 1, shape, leafDepth)) {
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
  std::vector<double> numbers;
  Napi::Array packs;
  std::vector<Napi::Value> path;

  Napi::Value Pack(dom::array a) {
    std::vector<int64_t> shape;
    int64_t leafDepth = -1;
    if (!RectShape(a, 0, shape, leafDepth)) return Napi::Value();
    int64_t leaves = 1;
    for (int64_t d : shape) leaves *= d;
    if (static_cast<size_t>(leaves) < minLeaves) return Napi::Value();
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
      case dom::element_type::OBJECT:
        return ObjectToJs(env, e, [&](Napi::String key, dom::key_value_pair field) {
          path.push_back(key);
          Napi::Value value = ToJs(field.value);
          path.pop_back();
          return value;
        });
      case dom::element_type::ARRAY: {
        const dom::array a = e.get_array().value_unsafe();
        Napi::Value packed = Pack(a);
        if (!packed.IsEmpty()) return packed;
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
        return hearth::ToJs(env, e, At::kOther);
    }
  }
};

// "-0" parses to the integer 0 here and to -0 in JSON.parse. Any "-0" not followed by a fraction,
// an exponent or a digit (also one inside a string: harmless, it only costs the fast path).
bool HasNegativeZero(const uint8_t* data, size_t size) {
  for (const uint8_t* p = data; size >= 2;) {
    const void* hit = std::memchr(p, '-', size - 1);
    if (hit == nullptr) return false;
    const uint8_t* at = static_cast<const uint8_t*>(hit);
    const size_t rest = size - static_cast<size_t>(at - p);
    if (at[1] == '0') {
      const uint8_t next = rest > 2 ? at[2] : ' ';
      if (next != '.' && next != 'e' && next != 'E' && (next < '0' || next > '9')) return true;
    }
    size = rest - 1;
    p = at + 1;
  }
  return false;
}

// Parsers kept for reuse (their buffers grow to the largest document seen, so only those of
// documents up to kKeptParserBytes come back); one per parse in flight, taken and given back.
class Parsers {
 public:
  std::unique_ptr<dom::parser> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return std::make_unique<dom::parser>();
    auto parser = std::move(free_.back());
    free_.pop_back();
    return parser;
  }
  void GiveBack(std::unique_ptr<dom::parser> parser) {
    if (!parser || parser->capacity() > kKeptParserBytes) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() < kKept) free_.push_back(std::move(parser));
  }

 private:
  static constexpr size_t kKept = 2;
  std::mutex mu_;
  std::vector<std::unique_ptr<dom::parser>> free_;
};

Parsers& KeptParsers() {
  static Parsers* parsers = new Parsers();  // leaked: parses may still run at exit
  return *parsers;
}

// The body's bytes, or an error for anything else.
Napi::Uint8Array BytesArg(const Napi::CallbackInfo& info, const char* name) {
  if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    throw MakeError(info.Env(), code::kInvalidArgument, std::string(name) + " takes a Uint8Array");
  }
  return info[0].As<Napi::Uint8Array>();
}

// A parse: the document (simdjson's tape, in its parser) and then its JS value.
struct Parse {
  std::unique_ptr<dom::parser> parser;
  dom::element doc;
  bool ok = false;
  // Nested deeper than simdjson's 1024 levels: refused here, not left to JSON.parse, which reads any
  // depth but on the JS thread (a 32 MB body of "[" would hold the event loop for seconds).
  bool tooDeep = false;

  // Any thread. The body is copied into a padded buffer of simdjson's (it reads past the end in blocks).
  void Run(const uint8_t* data, size_t size) {
    if (HasNegativeZero(data, size)) return;
    parser = KeptParsers().Take();
    const simdjson::error_code error = parser->parse(data, size, true).get(doc);
    ok = error == simdjson::SUCCESS;
    tooDeep = error == simdjson::DEPTH_ERROR;
  }

  // JS thread: {value, numbers, packs} (Packer), or undefined where JSON.parse must read the body
  // (too deep included: the caller's JSON.parse runs where it has a time limit). Gives the parser back.
  Napi::Value Packed(Napi::Env env, size_t minLeaves) {
    return Made(env, [&]() -> Napi::Value {
      Packer packer{env, minLeaves, {}, Napi::Array::New(env), {}};
      Napi::Value value = packer.ToJs(doc);
      Napi::Float64Array numbers = Napi::Float64Array::New(env, packer.numbers.size());
      if (!packer.numbers.empty())
        std::memcpy(numbers.Data(), packer.numbers.data(), packer.numbers.size() * sizeof(double));
      Napi::Object result = Napi::Object::New(env);
      result.Set("value", value);
      result.Set("numbers", numbers);
      result.Set("packs", packer.packs);
      return result;
    });
  }

  // JS thread: the value, or undefined where JSON.parse must read the body. Gives the parser back.
  Napi::Value Value(Napi::Env env) {
    if (tooDeep) {
      KeptParsers().GiveBack(std::move(parser));
      throw MakeError(env, code::kInvalidArgument, "the JSON is nested deeper than 1024 levels");
    }
    return Made(env, [&]() -> Napi::Value { return ToJs(env, doc, At::kTop); });
  }

  // make()'s value, or undefined where the parse failed or would differ from JSON.parse's; the
  // parser given back either way.
  template <typename Make>
  Napi::Value Made(Napi::Env env, Make make) {
    Napi::Value value = env.Undefined();
    try {
      if (ok) value = make();
    } catch (const Differs&) {
      value = env.Undefined();
    } catch (...) {
      KeptParsers().GiveBack(std::move(parser));
      throw;
    }
    KeptParsers().GiveBack(std::move(parser));
    return value;
  }
};

// The number parsing of a large body on libuv's threads; its JS value made on the JS thread.
class ParseJob : public Napi::AsyncWorker {
 public:
  ParseJob(Napi::Env env, Napi::Uint8Array bytes)
      : Napi::AsyncWorker(env, "hearth.parseInferJson"),
        deferred_(Napi::Promise::Deferred::New(env)),
        bytes_(Napi::Persistent(bytes)),
        data_(bytes.Data()),
        size_(bytes.ByteLength()) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

  void Execute() override { parse_.Run(data_, size_); }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    try {
      deferred_.Resolve(parse_.Value(env));
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    }
  }

  void OnError(const Napi::Error& e) override {
    KeptParsers().GiveBack(std::move(parse_.parser));
    deferred_.Reject(e.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  Napi::Reference<Napi::Uint8Array> bytes_;  // keeps the body alive while it is read off-thread
  const uint8_t* data_;
  size_t size_;
  Parse parse_;
};

}  // namespace

Napi::Value ParseInferJson(const Napi::CallbackInfo& info) {
  Napi::Uint8Array bytes = BytesArg(info, "parseInferJson");
  Parse parse;
  parse.Run(bytes.Data(), bytes.ByteLength());
  return parse.Value(info.Env());
}

Napi::Value ParseJsonPacked(const Napi::CallbackInfo& info) {
  Napi::Uint8Array bytes = BytesArg(info, "parseJsonPacked");
  const size_t minLeaves = info[1].IsNumber() ? std::max<int64_t>(1, info[1].As<Napi::Number>().Int64Value()) : 16;
  Parse parse;
  parse.Run(bytes.Data(), bytes.ByteLength());
  return parse.Packed(info.Env(), minLeaves);
}

Napi::Value ParseInferJsonAsync(const Napi::CallbackInfo& info) {
  Napi::Uint8Array bytes = BytesArg(info, "parseInferJsonAsync");
  auto* job = new ParseJob(info.Env(), bytes);  // deletes itself once settled
  Napi::Promise promise = job->Promise();
  job->Queue();
  return promise;
}

}  // namespace hearth

#endif  // HEARTH_WITH_SIMDJSON
