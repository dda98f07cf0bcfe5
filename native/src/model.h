// A loaded TorchScript model as JS sees it: `load()` and the NativeModel object over one instance.
//
// The parts: ModelState (model_state.h) is the per-model part, loaded once and shared;
// InstanceState (instance_state.h) is the per-instance part, on its own executor lane; the jobs
// that load and run them are in model_jobs.h.
//
// Lifetimes. A NativeModel holds its InstanceState through a shared_ptr, and each forward job holds
// another for as long as it runs, so `dispose()` only drops the JS handle's reference: forwards
// already running finish, and the weights are freed when the last instance and job let go.
// Sync methods run entirely on the JS thread; async ones return a promise settled on the JS thread
// after their job has run on the instance's lane (see executor.h).
#pragma once

#include <napi.h>

#include <memory>

#include "instance_state.h"
#include "model_state.h"

namespace hearth {

class NativeModel : public Napi::ObjectWrap<NativeModel> {
 public:
  static Napi::Function Define(Napi::Env env);
  // JS thread: the JS object over `instance` (what load() and share() resolve with).
  static Napi::Object New(Napi::Env env, std::shared_ptr<InstanceState> instance);

  explicit NativeModel(const Napi::CallbackInfo& info);

 private:
  // async: forward(inputs, dictKeys?, threads?) → Promise<{kind, outputs}>; `threads` > 0 runs this
  // forward alone with that many intra-op threads (an otherwise idle pool lends it every core); inputs are checked (count,
  // dtypes) synchronously and a bad call throws before any job is queued.
  Napi::Value Forward(const Napi::CallbackInfo& info);
  // async: forwardBatch(partsPerInput, dictKeys?): each input's parts are concatenated on the lane.
  Napi::Value ForwardBatch(const Napi::CallbackInfo& info);
  Napi::Value Submit(const Napi::CallbackInfo& info, bool batched);
  // sync: another instance over the same weights, on another lane where there is one.
  Napi::Value Share(const Napi::CallbackInfo& info);
  // sync: drops this handle's reference (running forwards keep theirs).
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  // sync: device, signature, weight bytes, load and warm-up times, forwards in flight, instances.
  Napi::Value Info(const Napi::CallbackInfo& info);

  std::shared_ptr<InstanceState> instance_;
};

// async: load(source: string | ArrayBufferView, device: string, warmupInputs: Tensor[],
//      warmupRuns: number, execution?: {inferenceMode?, optimizedExecution?, jitExecutor?,
//      jitProfiling?}) → Promise<NativeModel>. device "model" keeps the devices the module was saved
//      with (Triton's KIND_MODEL); inputs stay on the CPU.
Napi::Value Load(const Napi::CallbackInfo& info);

}  // namespace hearth
