#include "model_state.h"

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <caffe2/serialize/versions.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <chrono>
#include <cstring>
#include <regex>

#include "common.h"
#include "model_audit.h"
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

std::unique_ptr<caffe2::serialize::PyTorchStreamReader> OpenArchive(const std::string& path, const HostInput& bytes) {
  if (bytes.ref == nullptr) return std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
  return std::make_unique<caffe2::serialize::PyTorchStreamReader>(std::make_shared<MemoryReader>(bytes.data, bytes.bytes));
}

constexpr const char* kExport =
    "export it as TorchScript: torch.jit.script(model).save(\"model.pt\") (or torch.jit.trace(model, example_input).save(...))";

// What a file that torch::jit::load refused is, and what to do, for the mistakes people make: a
// torch.save() file (a state_dict or a pickled nn.Module, zip or legacy format), or a file from a
// PyTorch newer than this LibTorch. Empty where the file is none of those (LibTorch's words stand).
std::string DiagnoseLoadFailure(const std::string& why, const std::string& path, const HostInput& bytes) {
  const std::string torch = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR);
  const std::string newer = "re-export it with PyTorch " + torch + " (the same export under torch==" + torch +
                            ".*), or run Hearth on a node built with a LibTorch as new as the PyTorch that made it";
  static const std::regex versionRe("file with version ([0-9]+)");
  std::smatch m;
  if (std::regex_search(why, m, versionRe)) {
    return "this file was written by a PyTorch newer than this node's LibTorch " + torch + ": its archive format is version " +
           m[1].str() + ", and LibTorch " + torch + " reads formats up to " +
           std::to_string(caffe2::serialize::kMaxSupportedFileFormatVersion) + ". To serve it, " + newer;
  }
  if (why.find("Unknown builtin op") != std::string::npos || why.find("Unknown type name") != std::string::npos) {
    return "the model uses an operator or type this node's LibTorch " + torch +
           " does not have, as a file from a newer PyTorch may: " + newer;
  }
  // The first bytes: a zip archive (TorchScript, or torch.save since PyTorch 1.6), or a pickle
  // (torch.save's legacy format starts with pickle protocol 2: 0x80 0x02).
  unsigned char head[2] = {0, 0};
  if (bytes.ref != nullptr) {
    if (bytes.bytes >= 2) std::memcpy(head, bytes.data, 2);
  } else if (FILE* f = std::fopen(path.c_str(), "rb")) {
    if (std::fread(head, 1, 2, f) != 2) head[0] = 0;
    std::fclose(f);
  }
  if (head[0] == 0x80) {
    return std::string("this is a file saved with torch.save() in PyTorch's legacy pickle format, not TorchScript: ") +
           kExport;
  }
  if (head[0] != 'P' || head[1] != 'K') return "";
  try {
    auto reader = OpenArchive(path, bytes);
    if (reader->hasRecord("constants.pkl") || !reader->hasRecord("data.pkl")) return "";
    auto [data, size] = reader->getRecord("data.pkl");
    const std::string pickle(static_cast<const char*>(data.get()), std::min<size_t>(size, 1 << 20));
    // A state_dict pickles as collections.OrderedDict of tensors; a module as its own class.
    const bool stateDict = pickle.find("OrderedDict") != std::string::npos && pickle.find("torch.nn.modules") == std::string::npos;
    return stateDict ? std::string("this is a state_dict saved with torch.save(model.state_dict()), not TorchScript: it holds "
                                   "the weights without the code that runs them; ") + kExport
                     : std::string("this is a model pickled with torch.save(model), not TorchScript: only Python with the "
                                   "model's class can load it; ") + kExport;
  } catch (const c10::Error&) {
    return "";
  }
}

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
    // The operator check first, on the archive's code, before its __setstate__ methods run.
    AuditArchive(*OpenArchive(path, bytes));
    if (bytes.ref != nullptr) {
      state->module = torch::jit::load(std::make_shared<MemoryReader>(bytes.data, bytes.bytes), mapTo);
    } else {
      state->module = torch::jit::load(path, mapTo);
    }
  } catch (const EngineError&) {
    throw;
  } catch (const c10::Error& e) {
    const std::string why = e.what_without_backtrace();
    const std::string diagnosis = DiagnoseLoadFailure(why, path, bytes);
    // LibTorch's own words follow the diagnosis, except its "please upgrade PyTorch": the wrong advice
    // for a node whose LibTorch is older than the file.
    const bool tooNew = why.find("file with version") != std::string::npos;
    if (diagnosis.empty()) throw EngineError(code::kModelLoad, "not a loadable TorchScript file: " + why);
    throw EngineError(code::kModelLoad, tooNew ? diagnosis : diagnosis + " (LibTorch: " + why.substr(0, 300) + ")");
  } catch (const std::exception& e) {
    // The TorchScript compiler's errors (an unknown operator, with the source line that calls it).
    const std::string why = e.what();
    RefuseUnknownOp(why);
    // Code that ran as the file loaded (a __setstate__) raised: its error first, the traceback after.
    const size_t here = why.rfind("<--- HERE\n");
    if (why.rfind("The following operation failed in the TorchScript interpreter", 0) == 0 && here != std::string::npos) {
      throw EngineError(code::kModelLoad, "the model's code failed as the file loaded: " + why.substr(here + 10) + "\n" +
                                              why.substr(0, here + 9));
    }
    const std::string diagnosis = DiagnoseLoadFailure(why, path, bytes);
    if (diagnosis.empty()) throw;
    throw EngineError(code::kModelLoad, diagnosis + ".\n" + why);
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
