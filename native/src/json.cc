#include "json.h"

#ifdef HEARTH_WITH_SIMDJSON

#include <simdjson.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common.h"
#include "json_dom.h"

namespace hearth::json {

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

void FillLeaves(dom::array a, double*& out) {
  for (dom::element e : a) {
    if (e.type() == dom::element_type::ARRAY)
      FillLeaves(e.get_array().value_unsafe(), out);
    else
      *out++ = NumberOf(e);
  }
}

Napi::Value ScalarToJs(Napi::Env env, dom::element e) {
  switch (e.type()) {
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
    default:
      return env.Null();
  }
}

Napi::Uint8Array BytesArg(const Napi::CallbackInfo& info, const char* name) {
  if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    throw MakeError(info.Env(), code::kInvalidArgument, std::string(name) + " takes a Uint8Array");
  }
  return info[0].As<Napi::Uint8Array>();
}

}  // namespace hearth::json

namespace hearth {

using namespace json;  // NOLINT(google-build-using-namespace): this file's own helpers

namespace {

// Parsers that have read documents up to this size are kept for the next (Parsers): enough for a
// 1×3×224×224 image as JSON (~3 MB). A parser holds several times its capacity (the padded copy,
// structural indexes, the tape, strings), so kept ones are few and small.
constexpr size_t kKeptParserBytes = 4u << 20;

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

// Where a value sits: only `inputs[i].data` of the top-level object is packed.
enum class At { kTop, kInputs, kInput, kData, kOther };

At Inside(At parent, std::string_view key) {
  if (parent == At::kTop && key == "inputs") return At::kInputs;
  if (parent == At::kInput && key == "data") return At::kData;
  return At::kOther;
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
    default:
      return ScalarToJs(env, e);
  }
}

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

}  // namespace

namespace json {

void GiveBack(std::unique_ptr<dom::parser> parser) { KeptParsers().GiveBack(std::move(parser)); }

void Parse::Run(const uint8_t* data, size_t size) {
  if (HasNegativeZero(data, size)) return;
  parser = KeptParsers().Take();
  const simdjson::error_code error = parser->parse(data, size, true).get(doc);
  ok = error == simdjson::SUCCESS;
  tooDeep = error == simdjson::DEPTH_ERROR;
}

Napi::Value Parse::Value(Napi::Env env) {
  if (tooDeep) {
    GiveBack(std::move(parser));
    throw MakeError(env, code::kInvalidArgument, "the JSON is nested deeper than 1024 levels");
  }
  return Made(env, [&]() -> Napi::Value { return ToJs(env, doc, At::kTop); });
}

}  // namespace json

namespace {

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
    GiveBack(std::move(parse_.parser));
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

Napi::Value ParseInferJsonAsync(const Napi::CallbackInfo& info) {
  Napi::Uint8Array bytes = BytesArg(info, "parseInferJsonAsync");
  auto* job = new ParseJob(info.Env(), bytes);  // deletes itself once settled
  Napi::Promise promise = job->Promise();
  job->Queue();
  return promise;
}

}  // namespace hearth

#endif  // HEARTH_WITH_SIMDJSON
