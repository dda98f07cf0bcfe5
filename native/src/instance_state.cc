#include "instance_state.h"

#include <torch/csrc/jit/runtime/graph_executor.h>

#ifdef HEARTH_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#endif

#include "executor.h"

namespace hearth {

InstanceState::InstanceState(std::shared_ptr<ModelState> m, int l, int avoid)
    : model(std::move(m)), lane(l >= 0 ? l : Executor::Get().AcquireLane(model->device.is_cpu(), avoid)) {
#ifdef HEARTH_WITH_CUDA
  if (model->device.is_cuda()) stream = c10::cuda::getStreamFromPool(false, model->device.index());
#endif
}

InstanceState::~InstanceState() { Executor::Get().ReleaseLane(lane); }

c10::IValue RunForward(InstanceState& instance, const std::vector<c10::IValue>& hostInputs) {
  ModelState& model = *instance.model;
#ifdef HEARTH_WITH_CUDA
  c10::optional<c10::cuda::CUDAStreamGuard> streamGuard;
  if (instance.stream) streamGuard.emplace(*instance.stream);
#endif
  torch::jit::GraphOptimizerEnabledGuard optimize(model.execution.optimizedExecution);
  if (model.execution.jitExecutor >= 0) torch::jit::getExecutorMode() = model.execution.jitExecutor == 1;
  if (model.execution.jitProfiling >= 0) torch::jit::getProfilingMode() = model.execution.jitProfiling == 1;
  std::vector<c10::IValue> args;
  args.reserve(hostInputs.size());
  for (const auto& v : hostInputs) args.emplace_back(model.device.is_cpu() || !v.isTensor() ? v : c10::IValue(v.toTensor().to(model.device)));
  c10::IValue out = model.module.forward(std::move(args));
#ifdef HEARTH_WITH_CUDA
  if (instance.stream) instance.stream->synchronize();
#endif
  return out;
}

}  // namespace hearth
