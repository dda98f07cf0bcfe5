// What json.cc (KServe bodies) and json_packed.cc (any document, for a hook) share: simdjson's
// DOM made into JS values as JSON.parse makes them, and a parse with its parser kept for the next.
// Built only with simdjson (HEARTH_WITH_SIMDJSON).
#pragma once

#include <napi.h>
#include <simdjson.h>

#include <memory>

namespace hearth::json {

namespace dom = simdjson::dom;

// Where simdjson's value would differ from JSON.parse's: the caller falls back.
struct Differs {};

double NumberOf(dom::element e);
bool IsNumber(dom::element_type t);
// Each leaf of `a` (nested at any depth) in order, from `out` on.
void FillLeaves(dom::array a, double*& out);
// A string, number, boolean or null as JS makes it.
Napi::Value ScalarToJs(Napi::Env env, dom::element e);
// The body's bytes, or an error for anything else.
Napi::Uint8Array BytesArg(const Napi::CallbackInfo& info, const char* name);
// A parser back to those kept for the next parse (if it is small enough to keep).
void GiveBack(std::unique_ptr<dom::parser> parser);

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

// A parse: the document (simdjson's tape, in its parser) and then its JS value.
struct Parse {
  std::unique_ptr<dom::parser> parser;
  dom::element doc;
  bool ok = false;
  // Nested deeper than simdjson's 1024 levels: refused here, not left to JSON.parse, which reads any
  // depth but on the JS thread (a 32 MB body of "[" would hold the event loop for seconds).
  bool tooDeep = false;

  // Any thread. The body is copied into a padded buffer of simdjson's (it reads past the end in blocks).
  void Run(const uint8_t* data, size_t size);

  // JS thread: the value, or undefined where JSON.parse must read the body. Gives the parser back.
  Napi::Value Value(Napi::Env env);

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
      GiveBack(std::move(parser));
      throw;
    }
    GiveBack(std::move(parser));
    return value;
  }
};

}  // namespace hearth::json
