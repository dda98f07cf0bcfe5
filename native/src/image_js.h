// Registers the image functions (image_js.cc) on the addon's exports.
#pragma once

#include <napi.h>

namespace hearth {

void RegisterImage(Napi::Env env, Napi::Object exports);

}  // namespace hearth
