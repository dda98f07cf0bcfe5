// JSON for the KServe v2 JSON route: a request body parsed by simdjson into JS values, with the
// numbers of tensor data arrays packed into one Float64Array instead of an Array of heap numbers.
// V8's JSON.parse of a 3 MB body of 150k numbers (a 1×3×224×224 image) takes ~28 ms on the event
// loop, most of it making the numbers; this takes a few, and hands the numbers over in one buffer.
//
// Built only where simdjson is found (Debian's libsimdjson-dev); without it `parseInferJson` is absent
// and callers use JSON.parse.
#pragma once

#include <napi.h>

namespace hearth {

// sync: parseInferJson(bytes: Uint8Array) → value | undefined.
// The value is what JSON.parse would return for the same bytes, except that `inputs[i].data` of
// the top-level object, where it is an array whose leaves (at any depth) are all numbers, at least
// one, becomes a Float64Array of those leaves in order. undefined where this parse could differ from JSON.parse's, or fails: the
// caller then parses with JSON.parse, which gives its own error for a body that is not JSON (and
// handles what this does not: integers past 64 bits, numbers past double's range, lone UTF-16
// surrogates, a "__proto__" key, "-0").
Napi::Value ParseInferJson(const Napi::CallbackInfo& info);

// sync: parseJsonPacked(bytes: Uint8Array, minLeaves = 16) → {value, numbers, packs} | undefined.
// Any JSON document, for a hook's request.json: `value` is what JSON.parse would return, except
// that each outermost array that is rectangular with numbers for leaves (nested or flat), of at
// least minLeaves leaves, is null; its leaves in order are in the Float64Array `numbers`, and
// `packs` lists [path from the top (keys and indexes), offset into numbers, shape] for each. The
// caller rebuilds the arrays where they were. undefined as for parseInferJson, and for a document
// nested too deep.
Napi::Value ParseJsonPacked(const Napi::CallbackInfo& info);

// async: parseInferJsonAsync(bytes: Uint8Array) → Promise<value | undefined>, the same value, with
// the parse (the number crunching) on libuv's threads and only the JS value made on the JS thread.
Napi::Value ParseInferJsonAsync(const Napi::CallbackInfo& info);

}  // namespace hearth
