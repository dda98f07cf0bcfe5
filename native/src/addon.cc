// Module entry: registers the engine's functions and its per-environment state.
#include "addon.h"

#include <ATen/Parallel.h>

#include "common.h"
#include "devices.h"
#include "model.h"

namespace hearth {

EnvData& GetEnvData(Napi::Env env) { return *env.GetInstanceData<EnvData>(); }

namespace {

Napi::Value SetIntraOpThreads(const Napi::CallbackInfo& info) {
  if (!info[0].IsNumber() || info[0].As<Napi::Number>().Int32Value() < 1) {
    throw MakeError(info.Env(), code::kInvalidArgument, "intraOpThreads must be an integer ≥ 1");
  }
  Executor::Get().SetIntraOpThreads(info[0].As<Napi::Number>().Int32Value());
  return info.Env().Undefined();
}

Napi::Value SetExecutorThreads(const Napi::CallbackInfo& info) {
  if (!info[0].IsNumber() || info[0].As<Napi::Number>().Int32Value() < 1) {
    throw MakeError(info.Env(), code::kInvalidArgument, "executorThreads must be an integer ≥ 1");
  }
  Executor::Get().SetThreads(info[0].As<Napi::Number>().Int32Value());
  return info.Env().Undefined();
}

Napi::Value Threads(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  out.Set("intraOp", Napi::Number::New(env, Executor::Get().IntraOpThreads()));
  out.Set("executor", Napi::Number::New(env, Executor::Get().Threads()));
  return out;
}

void WaitForJobs(void* data) { static_cast<Completion*>(data)->WaitIdle(); }

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto* data = new EnvData();
  data->modelConstructor = Napi::Persistent(NativeModel::Define(env));
  data->completion = std::make_unique<Completion>(env);
  // Registered after the completion's thread-safe function, so it runs before that is closed:
  // teardown waits for this environment's running jobs, which read its memory.
  napi_add_env_cleanup_hook(env, WaitForJobs, data->completion.get());
  env.SetInstanceData<EnvData>(data);

  exports.Set("load", Napi::Function::New<Load>(env, "load"));
  exports.Set("devices", Napi::Function::New<Devices>(env, "devices"));
  exports.Set("setIntraOpThreads", Napi::Function::New<SetIntraOpThreads>(env, "setIntraOpThreads"));
  exports.Set("setExecutorThreads", Napi::Function::New<SetExecutorThreads>(env, "setExecutorThreads"));
  exports.Set("threads", Napi::Function::New<Threads>(env, "threads"));
  return exports;
}

}  // namespace

}  // namespace hearth

static Napi::Object InitHearth(Napi::Env env, Napi::Object exports) { return hearth::Init(env, exports); }

NODE_API_MODULE(hearth_native, InitHearth)
