// Per-environment state of the addon (main thread and each worker thread have their own).
#pragma once

#include <napi.h>

#include <memory>

#include "executor.h"

namespace hearth {

struct EnvData {
  Napi::FunctionReference modelConstructor;
  std::unique_ptr<Completion> completion;
};

EnvData& GetEnvData(Napi::Env env);

}  // namespace hearth
