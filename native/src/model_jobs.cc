#include "model_jobs.h"

#include <dlfcn.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "model.h"

namespace hearth {

std::vector<HostInput> ReadInputs(Napi::Env env, const Napi::Value& value) {
  if (!value.IsArray()) throw EngineError(code::kInvalidArgument, "inputs must be an array of tensors");
  Napi::Array array = value.As<Napi::Array>();
  std::vector<HostInput> inputs;
  try {
    for (uint32_t i = 0; i < array.Length(); ++i) inputs.push_back(ReadInput(env, array.Get(i), i));
  } catch (...) {
    for (auto& in : inputs) ReleaseInput(env, in);
    throw;
  }
  return inputs;
}

namespace {

std::vector<at::Tensor> WrapInputs(const std::vector<HostInput>& inputs) {
  std::vector<at::Tensor> tensors;
  tensors.reserve(inputs.size());
  for (const auto& in : inputs) {
    if (in.isBytes) throw EngineError(code::kDType, "BYTES inputs go to forward() as List[str] and cannot be concatenated as tensors here");
    tensors.push_back(WrapInput(in));
  }
  return tensors;
}

// One forward argument per input: a List[str] for BYTES, else a tensor view of JS memory.
std::vector<c10::IValue> ArgsOf(const std::vector<HostInput>& inputs) {
  std::vector<c10::IValue> args;
  for (const auto& in : inputs) args.emplace_back(in.isBytes ? c10::IValue(ReadStrings({in})) : c10::IValue(WrapInput(in)));
  return args;
}

}  // namespace

LoadJob::LoadJob(Napi::Env env, std::string path, HostInput bytes, c10::Device device, bool keepDevice,
                 std::vector<HostInput> warmup, int runs, ExecutionOptions execution)
    : deferred_(Napi::Promise::Deferred::New(env)), path_(std::move(path)), bytes_(bytes),
      device_(device), keepDevice_(keepDevice), warmup_(std::move(warmup)), runs_(runs), execution_(execution),
      lane_(Executor::Get().AcquireLane(device.is_cpu())) {}

LoadJob::~LoadJob() {
  if (lane_ >= 0) Executor::Get().ReleaseLane(lane_);
}

void LoadJob::Run() {
  try {
    auto state = LoadModelState(path_, bytes_, device_, keepDevice_, execution_);
    instance_ = std::make_shared<InstanceState>(state, lane_);
    lane_ = -1;  // the instance owns the lane now
    if (!warmup_.empty() && runs_ > 0) {
      c10::InferenceMode guard;
      const auto start = std::chrono::steady_clock::now();
      const auto host = ArgsOf(warmup_);
      try {
        for (int i = 0; i < runs_; ++i) RunForward(*instance_, host);
        DeviceSync(device_);
      } catch (const c10::Error& e) {
        throw EngineError(code::kModelLoad, "warm-up forward failed: " + std::string(ForwardError(e.what_without_backtrace()).what()));
      } catch (const std::exception& e) {
        throw EngineError(code::kModelLoad, "warm-up forward failed: " + std::string(ForwardError(e.what()).what()));
      }
      state->warmupMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      state->warmupRuns = runs_;
    }
  } catch (...) {
    instance_.reset();
    failure_ = CaptureCurrentException(code::kModelLoad);
  }
}

void LoadJob::Settle(Napi::Env env) {
  ReleaseInput(env, bytes_);
  for (auto& in : warmup_) ReleaseInput(env, in);
  if (failure_) {
    deferred_.Reject(MakeError(env, failure_.code, failure_.message).Value());
  } else {
    deferred_.Resolve(NativeModel::New(env, std::move(instance_)));
  }
}

namespace {

// omp_set_num_threads and omp_get_max_threads of the OpenMP runtime LibTorch loaded (libgomp), or
// null where there is none to find: forwards then run on the configured count, lent none.
struct OpenMp {
  void (*set)(int) = nullptr;
  int (*get)() = nullptr;
};

const OpenMp& Omp() {
  static const OpenMp omp = [] {
    OpenMp o;
    if (void* gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD)) {
      o.set = reinterpret_cast<void (*)(int)>(dlsym(gomp, "omp_set_num_threads"));
      o.get = reinterpret_cast<int (*)()>(dlsym(gomp, "omp_get_max_threads"));
      if (o.set == nullptr || o.get == nullptr) o = OpenMp{};
    }
    return o;
  }();
  return omp;
}

// Intra-op threads for one forward: `threads`, or the executor's configured count for 0. Set on
// the lane's own OpenMP team (a per-thread setting, which LibTorch's parallel regions and oneDNN
// read) and only when it changes. Not at::set_num_threads: that also resizes LibTorch's global
// pthreadpool and clears oneDNN's primitive cache for every lane — toggled on each forward it made
// the MLP's batch-1 forward 6.5 → 26 ms, and bench:serve's ResNet-50 at c=16 (two instances, lone
// forwards now and then) fell to 6.5 req/s; with this, 10.2 against 10.7 lending nothing.
void UseIntraOpThreads(int threads) {
  const OpenMp& omp = Omp();
  if (omp.set == nullptr) return;
  const int wanted = threads > 0 ? threads : Executor::Get().IntraOpThreads();
  if (omp.get() != wanted) omp.set(wanted);
}

}  // namespace

ForwardJob::ForwardJob(Napi::Env env, std::shared_ptr<InstanceState> instance, InputParts inputs, std::vector<std::string> dictKeys,
                       int threads, uint64_t maxOutputBytes)
    : deferred_(Napi::Promise::Deferred::New(env)), instance_(std::move(instance)), inputs_(std::move(inputs)),
      dictKeys_(std::move(dictKeys)), threads_(threads), maxOutputBytes_(maxOutputBytes) {
  instance_->inflight.fetch_add(1);
}

void ForwardJob::Run() {
  try {
    const ExecutionOptions& execution = instance_->model->execution;
    std::optional<c10::InferenceMode> inference;
    std::optional<torch::NoGradGuard> noGrad;
    if (execution.inferenceMode) inference.emplace(); else noGrad.emplace();
    std::vector<at::Tensor> pieces;  // views of JS memory
    std::vector<c10::IValue> host;
    for (const auto& parts : inputs_) {
      if (parts[0].isBytes) {
        for (const auto& part : parts) {
          if (!part.isBytes) throw EngineError(code::kDType, "an input's parts mix BYTES and tensors");
        }
        host.emplace_back(ReadStrings(parts));
        continue;
      }
      std::vector<at::Tensor> wrapped = WrapInputs(parts);
      pieces.insert(pieces.end(), wrapped.begin(), wrapped.end());
      if (wrapped.size() == 1) {
        host.push_back(wrapped[0]);
      } else {
        try {
          host.push_back(torch::cat(wrapped, 0));
        } catch (const c10::Error& e) {
          throw EngineError(code::kShape, std::string("the parts of an input do not concatenate: ") + e.what_without_backtrace());
        }
      }
    }
    c10::IValue result;
    try {
      if (!dictKeys_.empty()) {
        // forward(self, inputs: Dict[str, Tensor]): every input by its name (Triton's dict input).
        c10::Dict<std::string, at::Tensor> dict;
        for (size_t i = 0; i < host.size(); ++i) {
          if (!host[i].isTensor()) throw EngineError(code::kDType, "a Dict[str, Tensor] input takes tensors only");
          dict.insert(dictKeys_[i], host[i].toTensor());
        }
        host = {c10::IValue(dict)};
      }
      UseIntraOpThreads(threads_);
      result = RunForward(*instance_, host);
    } catch (const c10::Error& e) {
      throw ForwardError(e.what_without_backtrace());
    } catch (const std::exception& e) {  // the TorchScript interpreter rethrows as std::runtime_error
      throw ForwardError(e.what());
    }
    // Outputs that alias an input (JS memory) or a weight are cloned; the rest are handed over.
    const auto& weights = instance_->model->weightStorages;
    const auto aliased = [&](const void* storage) {
      if (weights.count(storage) != 0) return true;
      for (const auto& t : pieces) {
        if (t.storage().data() == storage) return true;
      }
      return false;
    };
    CollectOutputs(result, aliased, maxOutputBytes_, &outputs_, &kind_);
  } catch (...) {
    outputs_.clear();
    failure_ = CaptureCurrentException(code::kForward);
  }
  instance_->inflight.fetch_sub(1);
}

void ForwardJob::Settle(Napi::Env env) {
  for (auto& parts : inputs_) {
    for (auto& in : parts) ReleaseInput(env, in);
  }
  if (failure_) {
    deferred_.Reject(MakeError(env, failure_.code, failure_.message).Value());
    return;
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("kind", Napi::String::New(env, kind_));
  Napi::Array outputs = Napi::Array::New(env, outputs_.size());
  for (size_t i = 0; i < outputs_.size(); ++i) outputs.Set(static_cast<uint32_t>(i), ToJs(env, outputs_[i]));
  result.Set("outputs", outputs);
  deferred_.Resolve(result);
}

}  // namespace hearth
