// The per-model part of a loaded TorchScript model (as Triton's pytorch_backend has model_state.cc):
// the module with its weights, on one device, loaded once and shared by every instance.
//
// Lifetime: owned through shared_ptr by every InstanceState over it (and by running forwards, which
// hold their instance); the weights are freed when the last of them lets go. Immutable once loaded,
// so instances on several threads read it without locks.
#pragma once

#include <torch/script.h>

#include <string>
#include <unordered_set>
#include <vector>

#include "tensor.h"

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

// "cpu", "cuda" or "cuda:N" → a device that exists here; throws EngineError(kDevice) otherwise.
c10::Device ParseDevice(const std::string& name);

// Waits for the device's queued work (a no-op on CPU).
void DeviceSync(const c10::Device& device);

// Executor thread. Loads a TorchScript module from `path`, or from `bytes` when it holds memory (JS
// memory pinned by the caller for the load, read without a copy), onto `device` — or onto the
// devices it was saved with when `keepDevice` (Triton's KIND_MODEL) — in eval mode, and reads its
// forward() signature and weights. Throws EngineError(kModelLoad).
std::shared_ptr<ModelState> LoadModelState(const std::string& path, const HostInput& bytes, c10::Device device,
                                           bool keepDevice, ExecutionOptions execution);

}  // namespace hearth
