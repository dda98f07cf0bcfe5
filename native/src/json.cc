#include "json.h"

#ifdef HEARTH_WITH_SIMDJSON

#include <simdjson.h>

#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "common.h"

namespace hearth {

namespace {

namespace dom = simdjson::dom;

// Where simdjson's value would differ from JSON.parse's: the caller falls back.
struct Differs {};

// Documents up to this size reuse one parser per thread (its buffers grow to the largest seen);
// a larger one gets a parser of its own, freed with it.
constexpr size_t kKeptParserBytes = 8u << 20;

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

Napi::Value ToJs(Napi::Env env, dom::element e, At at) {
  switch (e.type()) {
    case dom::element_type::OBJECT: {
      Napi::Object out = Napi::Object::New(env);
      const dom::object object = e.get_object().value_unsafe();
      for (dom::key_value_pair field : object) {
        // JSON.parse makes "__proto__" an own property; setting it here would set the prototype.
        if (field.key == "__proto__") throw Differs{};
        out.Set(Napi::String::New(env, field.key.data(), field.key.size()), ToJs(env, field.value, Inside(at, field.key)));
      }
      return out;
    }
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

}  // namespace

Napi::Value ParseInferJson(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    throw MakeError(env, code::kInvalidArgument, "parseInferJson takes a Uint8Array");
  }
  Napi::Uint8Array bytes = info[0].As<Napi::Uint8Array>();
  const uint8_t* data = bytes.Data();
  const size_t size = bytes.ByteLength();
  if (HasNegativeZero(data, size)) return env.Undefined();

  thread_local dom::parser kept;
  std::unique_ptr<dom::parser> own;
  dom::parser* parser = &kept;
  if (size > kKeptParserBytes) {
    own = std::make_unique<dom::parser>();
    parser = own.get();
  }
  dom::element doc;
  // The body is copied into a padded buffer of simdjson's (it reads past the end in blocks).
  if (parser->parse(data, size, true).get(doc) != simdjson::SUCCESS) return env.Undefined();
  try {
    return ToJs(env, doc, At::kTop);
  } catch (const Differs&) {
    return env.Undefined();
  }
}

}  // namespace hearth

#endif  // HEARTH_WITH_SIMDJSON
