// The per-instance part of a model (as Triton's pytorch_backend has model_instance_state.cc): a
// handle on the shared ModelState plus what one execution lane owns (on CUDA, its own stream).
// Instances of one model share its weights, so a second instance costs almost no memory;
// TorchScript modules are safe to run from several threads at once for inference, which is what
// lets instances share one module.
//
// Lifetime: owned through shared_ptr by its JS object (NativeModel) and by each ForwardJob that
// runs on it, so `dispose()` while forwards run frees nothing under them. It holds its executor
// lane (Executor::AcquireLane) from construction to destruction.
#pragma once

#include <torch/script.h>

#include <atomic>
#include <memory>
#include <vector>

#ifdef HEARTH_WITH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

#include "model_state.h"

namespace hearth {

struct InstanceState {
  // `lane` is the executor lane this instance runs on (see Executor); -1 picks one, avoiding
  // `avoid` (the lane of the instance it is shared from).
  explicit InstanceState(std::shared_ptr<ModelState> m, int lane = -1, int avoid = -1);
  ~InstanceState();
  InstanceState(const InstanceState&) = delete;
  InstanceState& operator=(const InstanceState&) = delete;

  std::shared_ptr<ModelState> model;
  int lane;
  // Forwards submitted and not yet finished (ForwardJob counts itself in and out), for info().
  std::atomic<int> inflight{0};
#ifdef HEARTH_WITH_CUDA
  c10::optional<c10::cuda::CUDAStream> stream;
#endif
};

// Executor thread (the instance's lane). Runs forward on the instance's device and stream; inputs
// are host tensors (moved to the device) or lists of strings. Throws c10::Error or
// std::runtime_error from the TorchScript interpreter.
c10::IValue RunForward(InstanceState& instance, const std::vector<c10::IValue>& hostInputs);

}  // namespace hearth
