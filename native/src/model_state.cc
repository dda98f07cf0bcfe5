#include "model_state.h"

#include <caffe2/serialize/read_adapter_interface.h>
#include <torch/cuda.h>

#include <chrono>
#include <cstring>

#include "common.h"
#include "model_ops.h"

namespace hearth {

namespace {

// Reads a TorchScript archive straight from JS memory (pinned for the load), without a copy.
class MemoryReader : public caffe2::serialize::ReadAdapterInterface {
 public:
  MemoryReader(const void* data, size_t size) : data_(static_cast<const char*>(data)), size_(size) {}
  size_t size() const override { return size_; }
  size_t read(uint64_t pos, void* buf, size_t n, const char* what = "") const override {
    if (pos >= size_) return 0;
    n = std::min<size_t>(n, size_ - pos);
    std::memcpy(buf, data_ + pos, n);
    return n;
  }

 private:
  const char* data_;
  size_t size_;
};

}  // namespace

c10::Device ParseDevice(const std::string& name) {
  c10::Device device(c10::kCPU);
  try {
    device = c10::Device(name);
  } catch (const c10::Error&) {
    throw EngineError(code::kDevice, "device must be \"cpu\", \"cuda\" or \"cuda:N\", got \"" + name + "\"");
  }
  if (device.is_cpu()) return device;
  if (!device.is_cuda()) throw EngineError(code::kDevice, "device \"" + name + "\" is not supported; use cpu or cuda");
  if (!torch::cuda::is_available()) {
    throw EngineError(code::kDevice, "device \"" + name + "\" requested but CUDA is not available (LibTorch is CPU-only or no GPU is visible)");
  }
  const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
  const int64_t index = device.has_index() ? device.index() : 0;
  if (index >= count) {
    throw EngineError(code::kDevice, "device \"" + name + "\" does not exist: " + std::to_string(count) + " CUDA device(s) visible");
  }
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

void DeviceSync(const c10::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

std::shared_ptr<ModelState> LoadModelState(const std::string& path, const HostInput& bytes, c10::Device device,
                                           bool keepDevice, ExecutionOptions execution) {
  auto state = std::make_shared<ModelState>();
  state->device = device;
  state->execution = execution;
  c10::InferenceMode guard;
  const auto start = std::chrono::steady_clock::now();
  const c10::optional<c10::Device> mapTo = keepDevice ? c10::nullopt : c10::optional<c10::Device>(device);
  try {
    if (bytes.ref != nullptr) {
      state->module = torch::jit::load(std::make_shared<MemoryReader>(bytes.data, bytes.bytes), mapTo);
    } else {
      state->module = torch::jit::load(path, mapTo);
    }
  } catch (const c10::Error& e) {
    throw EngineError(code::kModelLoad, std::string("not a loadable TorchScript file: ") + e.what_without_backtrace());
  }
  CheckModelOps(state->module);
  state->module.eval();
  auto method = state->module.find_method("forward");
  if (!method) throw EngineError(code::kModelLoad, "the TorchScript module has no forward() method");
  const auto& schema = method->function().getSchema();
  const auto& args = schema.arguments();
  state->maxInputs = schema.is_vararg() ? -1 : static_cast<int>(args.size()) - 1;
  for (size_t i = 1; i < args.size(); ++i) {
    if (!args[i].default_value()) state->minInputs = static_cast<int>(i);
    state->argNames.push_back(args[i].name());
    state->argTypes.push_back(args[i].type()->str());
  }
  // Weights are counted once per storage (tied parameters share one); outputs that alias them are
  // cloned before they reach JS (ForwardJob).
  auto account = [&](const at::Tensor& t) {
    if (!t.defined() || !t.has_storage()) return;
    if (state->weightStorages.insert(t.storage().data()).second) state->weightBytes += t.storage().nbytes();
  };
  for (const auto& p : state->module.parameters()) account(p);
  for (const auto& b : state->module.buffers()) account(b);
  DeviceSync(device);
  state->loadMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return state;
}

}  // namespace hearth
