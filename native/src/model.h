// A loaded TorchScript model and its instances.
//
// `ModelState` is the per-model part: the module with its weights, on one device, loaded once.
// `InstanceState` is the per-instance part: a handle on the shared model plus what one execution
// lane owns (on CUDA, its own stream). Instances of one model share its weights, so a second
// instance costs almost no memory. TorchScript modules are safe to run from several threads at once
// for inference, which is what lets instances share one module.
//
// `NativeModel` is the JS object over one instance. `dispose()` drops the JS handle's reference:
// forwards already running hold their own, so the weights are freed when the last one finishes.
#pragma once

#include <napi.h>
#include <torch/script.h>

#include <atomic>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#ifdef HEARTH_WITH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace hearth {

// How forward runs (the parameters Triton's PyTorch backend reads). The JIT executor and profiling
// switches are process-wide in LibTorch; like Triton, they are set before each forward that names them.
struct ExecutionOptions {
  bool inferenceMode = true;      // c10::InferenceMode; false: NoGradGuard
  bool optimizedExecution = true; // TorchScript graph optimisations
  int jitExecutor = -1;           // -1: leave as is, else 0/1
  int jitProfiling = -1;
};

struct ModelState {
  torch::jit::Module module;
  ExecutionOptions execution;
  c10::Device device = c10::Device(c10::kCPU);
  int minInputs = 0;
  int maxInputs = -1;  // -1: variadic
  // forward()'s arguments after self: names and TorchScript types ("Tensor", "List[str]", …), which
  // the runtime binds a config's inputs to as Triton's PyTorch backend does.
  std::vector<std::string> argNames;
  std::vector<std::string> argTypes;
  int64_t weightBytes = 0;
  std::unordered_set<const void*> weightStorages;
  double loadMs = 0;
  double warmupMs = 0;
  int warmupRuns = 0;
};

struct InstanceState {
  // `lane` is the executor lane this instance runs on (see Executor); -1 picks one, avoiding
  // `avoid` (the lane of the instance it is shared from).
  explicit InstanceState(std::shared_ptr<ModelState> m, int lane = -1, int avoid = -1);
  ~InstanceState();
  InstanceState(const InstanceState&) = delete;
  InstanceState& operator=(const InstanceState&) = delete;

  std::shared_ptr<ModelState> model;
  int lane;
  std::atomic<int> inflight{0};
#ifdef HEARTH_WITH_CUDA
  c10::optional<c10::cuda::CUDAStream> stream;
#endif
};

// Runs forward on the instance's device (and stream); inputs are host tensors (moved to the device)
// or lists of strings.
c10::IValue RunForward(InstanceState& instance, const std::vector<c10::IValue>& hostInputs);

class NativeModel : public Napi::ObjectWrap<NativeModel> {
 public:
  static Napi::Function Define(Napi::Env env);
  static Napi::Object New(Napi::Env env, std::shared_ptr<InstanceState> instance);

  explicit NativeModel(const Napi::CallbackInfo& info);

 private:
  Napi::Value Forward(const Napi::CallbackInfo& info);
  Napi::Value ForwardBatch(const Napi::CallbackInfo& info);
  Napi::Value Submit(const Napi::CallbackInfo& info, bool batched);
  Napi::Value Share(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value Info(const Napi::CallbackInfo& info);

  std::shared_ptr<InstanceState> instance_;
};

// load(source: string | ArrayBufferView, device: string, warmupInputs: Tensor[], warmupRuns: number,
//      execution?: {inferenceMode?, optimizedExecution?, jitExecutor?, jitProfiling?})
// device "model" keeps the devices the module was saved with (Triton's KIND_MODEL); inputs stay on the CPU.
Napi::Value Load(const Napi::CallbackInfo& info);

}  // namespace hearth
