#include "model.h"

#include <caffe2/serialize/read_adapter_interface.h>
#include <torch/cuda.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "addon.h"
#include "common.h"
#include "executor.h"
#include "tensor.h"

#include <torch/csrc/jit/runtime/graph_executor.h>

#include <optional>

#ifdef HEARTH_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#endif

namespace hearth {

namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

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

class LoadJob : public Job {
 public:
  LoadJob(Napi::Env env, std::string path, HostInput bytes, c10::Device device, bool keepDevice,
          std::vector<HostInput> warmup, int runs, ExecutionOptions execution)
      : deferred_(Napi::Promise::Deferred::New(env)), path_(std::move(path)), bytes_(bytes),
        device_(device), keepDevice_(keepDevice), warmup_(std::move(warmup)), runs_(runs), execution_(execution),
        lane_(Executor::Get().AcquireLane(device.is_cpu())) {}

  ~LoadJob() override {
    if (lane_ >= 0) Executor::Get().ReleaseLane(lane_);
  }

  // The load and warm-up run on the lane the first instance will use.
  int lane() const { return lane_; }

  Napi::Promise Promise() const { return deferred_.Promise(); }

  void Run() override {
    try {
      auto state = std::make_shared<ModelState>();
      state->device = device_;
      state->execution = execution_;
      c10::InferenceMode guard;
      auto start = std::chrono::steady_clock::now();
      const c10::optional<c10::Device> mapTo = keepDevice_ ? c10::nullopt : c10::optional<c10::Device>(device_);
      try {
        if (bytes_.ref != nullptr) {
          state->module = torch::jit::load(std::make_shared<MemoryReader>(bytes_.data, bytes_.bytes), mapTo);
        } else {
          state->module = torch::jit::load(path_, mapTo);
        }
      } catch (const c10::Error& e) {
        throw EngineError(code::kModelLoad, std::string("not a loadable TorchScript file: ") + e.what_without_backtrace());
      }
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
      auto account = [&](const at::Tensor& t) {
        if (!t.defined() || !t.has_storage()) return;
        if (state->weightStorages.insert(t.storage().data()).second) state->weightBytes += t.storage().nbytes();
      };
      for (const auto& p : state->module.parameters()) account(p);
      for (const auto& b : state->module.buffers()) account(b);
      DeviceSync(device_);
      state->loadMs = MsSince(start);

      instance_ = std::make_shared<InstanceState>(state, lane_);
      lane_ = -1;  // the instance owns the lane now
      if (!warmup_.empty() && runs_ > 0) {
        start = std::chrono::steady_clock::now();
        const auto host = ArgsOf(warmup_);
        try {
          for (int i = 0; i < runs_; ++i) RunForward(*instance_, host);
          DeviceSync(device_);
        } catch (const c10::Error& e) {
          throw EngineError(code::kModelLoad, "warm-up forward failed: " + std::string(ForwardError(e.what_without_backtrace()).what()));
        } catch (const std::exception& e) {
          throw EngineError(code::kModelLoad, "warm-up forward failed: " + std::string(ForwardError(e.what()).what()));
        }
        state->warmupMs = MsSince(start);
        state->warmupRuns = runs_;
      }
    } catch (...) {
      instance_.reset();
      failure_ = CaptureCurrentException(code::kModelLoad);
    }
  }

  void Settle(Napi::Env env) override {
    ReleaseInput(env, bytes_);
    for (auto& in : warmup_) ReleaseInput(env, in);
    if (failure_) {
      deferred_.Reject(MakeError(env, failure_.code, failure_.message).Value());
    } else {
      deferred_.Resolve(NativeModel::New(env, std::move(instance_)));
    }
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::string path_;
  HostInput bytes_;
  c10::Device device_;
  bool keepDevice_;
  std::vector<HostInput> warmup_;
  int runs_;
  ExecutionOptions execution_;
  int lane_;
  std::shared_ptr<InstanceState> instance_;
  Failure failure_;
};

// Inputs arrive as parts: each input is one or more pieces (the requests of a batch) that are
// concatenated along the batch dimension here, on the lane, so the event loop never copies a batch.
using InputParts = std::vector<std::vector<HostInput>>;

class ForwardJob : public Job {
 public:
  ForwardJob(Napi::Env env, std::shared_ptr<InstanceState> instance, InputParts inputs, std::vector<std::string> dictKeys)
      : deferred_(Napi::Promise::Deferred::New(env)), instance_(std::move(instance)), inputs_(std::move(inputs)),
        dictKeys_(std::move(dictKeys)) {
    instance_->inflight.fetch_add(1);
  }

  Napi::Promise Promise() const { return deferred_.Promise(); }

  void Run() override {
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
      CollectOutputs(result, aliased, &outputs_, &kind_);
    } catch (...) {
      outputs_.clear();
      failure_ = CaptureCurrentException(code::kForward);
    }
    instance_->inflight.fetch_sub(1);
  }

  void Settle(Napi::Env env) override {
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

 private:
  Napi::Promise::Deferred deferred_;
  std::shared_ptr<InstanceState> instance_;
  InputParts inputs_;
  std::vector<std::string> dictKeys_;
  std::vector<HostOutput> outputs_;
  std::string kind_;
  Failure failure_;
};

}  // namespace

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

Napi::Function NativeModel::Define(Napi::Env env) {
  return DefineClass(env, "NativeModel",
                     {InstanceMethod<&NativeModel::Forward>("forward"),
                      InstanceMethod<&NativeModel::ForwardBatch>("forwardBatch"),
                      InstanceMethod<&NativeModel::Share>("share"),
                      InstanceMethod<&NativeModel::Dispose>("dispose"),
                      InstanceMethod<&NativeModel::Info>("info")});
}

Napi::Object NativeModel::New(Napi::Env env, std::shared_ptr<InstanceState> instance) {
  auto* holder = new std::shared_ptr<InstanceState>(std::move(instance));
  auto external = Napi::External<std::shared_ptr<InstanceState>>::New(env, holder);
  Napi::Object obj = GetEnvData(env).modelConstructor.New({external});
  return obj;
}

NativeModel::NativeModel(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeModel>(info) {
  if (info.Length() != 1 || !info[0].IsExternal()) {
    throw MakeError(info.Env(), code::kInvalidArgument, "NativeModel is created by load(), not by new");
  }
  auto* holder = info[0].As<Napi::External<std::shared_ptr<InstanceState>>>().Data();
  instance_ = std::move(*holder);
  delete holder;
}

Napi::Value NativeModel::Forward(const Napi::CallbackInfo& info) {
  return Submit(info, false);
}

Napi::Value NativeModel::ForwardBatch(const Napi::CallbackInfo& info) {
  return Submit(info, true);
}

Napi::Value NativeModel::Submit(const Napi::CallbackInfo& info, bool batched) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    if (!instance_) throw EngineError(code::kDisposed, "the model was disposed");
    InputParts inputs;
    const auto release = [&] {
      for (auto& parts : inputs) {
        for (auto& in : parts) ReleaseInput(env, in);
      }
    };
    try {
      if (!batched) {
        for (auto& in : ReadInputs(env, info[0])) inputs.push_back({in});
      } else {
        if (!info[0].IsArray()) throw EngineError(code::kInvalidArgument, "forwardBatch takes an array of parts per input");
        Napi::Array all = info[0].As<Napi::Array>();
        for (uint32_t i = 0; i < all.Length(); ++i) {
          inputs.push_back(ReadInputs(env, all.Get(i)));
          if (inputs.back().empty()) throw EngineError(code::kInvalidArgument, "input " + std::to_string(i) + " has no parts");
        }
      }
    } catch (...) {
      release();
      throw;
    }
    const ModelState& model = *instance_->model;
    // dictKeys: the inputs go to forward() as one Dict[str, Tensor], keyed by these names.
    std::vector<std::string> dictKeys;
    if (info.Length() > 1 && info[1].IsArray()) {
      Napi::Array keys = info[1].As<Napi::Array>();
      for (uint32_t i = 0; i < keys.Length(); ++i) dictKeys.push_back(keys.Get(i).ToString().Utf8Value());
      if (dictKeys.size() != inputs.size() || model.argTypes.size() != 1 || model.argTypes[0].rfind("Dict", 0) != 0) {
        release();
        throw EngineError(code::kInputCount, "dict keys need one key per input and a forward() that takes one Dict[str, Tensor]");
      }
    }
    const int n = dictKeys.empty() ? static_cast<int>(inputs.size()) : 1;
    if (n < model.minInputs || (model.maxInputs >= 0 && n > model.maxInputs)) {
      release();
      const std::string expected = model.minInputs == model.maxInputs
                                       ? std::to_string(model.maxInputs)
                                       : std::to_string(model.minInputs) + " to " + std::to_string(model.maxInputs);
      throw EngineError(code::kInputCount, "the model's forward takes " + expected + " input(s), got " + std::to_string(n));
    }
    auto* job = new ForwardJob(env, instance_, std::move(inputs), std::move(dictKeys));
    Napi::Promise promise = job->Promise();
    GetEnvData(env).completion->Submit(env, instance_->lane, job);
    return promise;
  });
}

Napi::Value NativeModel::Share(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    if (!instance_) throw EngineError(code::kDisposed, "the model was disposed");
    return New(env, std::make_shared<InstanceState>(instance_->model, -1, instance_->lane));
  });
}

Napi::Value NativeModel::Dispose(const Napi::CallbackInfo& info) {
  instance_.reset();
  return info.Env().Undefined();
}

Napi::Value NativeModel::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  out.Set("disposed", Napi::Boolean::New(env, !instance_));
  if (!instance_) return out;
  const ModelState& m = *instance_->model;
  out.Set("device", Napi::String::New(env, m.device.str()));
  out.Set("inferenceMode", Napi::Boolean::New(env, m.execution.inferenceMode));
  out.Set("optimizedExecution", Napi::Boolean::New(env, m.execution.optimizedExecution));
  out.Set("minInputs", Napi::Number::New(env, m.minInputs));
  out.Set("maxInputs", Napi::Number::New(env, m.maxInputs));
  Napi::Array argNames = Napi::Array::New(env, m.argNames.size());
  Napi::Array argTypes = Napi::Array::New(env, m.argTypes.size());
  for (size_t i = 0; i < m.argNames.size(); ++i) {
    argNames.Set(static_cast<uint32_t>(i), Napi::String::New(env, m.argNames[i]));
    argTypes.Set(static_cast<uint32_t>(i), Napi::String::New(env, m.argTypes[i]));
  }
  out.Set("argNames", argNames);
  out.Set("argTypes", argTypes);
  out.Set("weightBytes", Napi::Number::New(env, static_cast<double>(m.weightBytes)));
  out.Set("loadMs", Napi::Number::New(env, m.loadMs));
  out.Set("warmupMs", Napi::Number::New(env, m.warmupMs));
  out.Set("warmupRuns", Napi::Number::New(env, m.warmupRuns));
  out.Set("inflight", Napi::Number::New(env, instance_->inflight.load()));
  out.Set("instances", Napi::Number::New(env, static_cast<double>(instance_->model.use_count())));
  return out;
}

Napi::Value Load(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    const std::string deviceName = info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "cpu";
    const bool keepDevice = deviceName == "model";
    c10::Device device = keepDevice ? c10::Device(c10::kCPU) : ParseDevice(deviceName);
    ExecutionOptions execution;
    if (info.Length() > 4 && info[4].IsObject()) {
      Napi::Object o = info[4].As<Napi::Object>();
      const auto flag = [&](const char* key, int fallback) {
        Napi::Value v = o.Get(key);
        return v.IsBoolean() ? (v.As<Napi::Boolean>().Value() ? 1 : 0) : fallback;
      };
      execution.inferenceMode = flag("inferenceMode", 1) == 1;
      execution.optimizedExecution = flag("optimizedExecution", 1) == 1;
      execution.jitExecutor = flag("jitExecutor", -1);
      execution.jitProfiling = flag("jitProfiling", -1);
    }
    std::string path;
    HostInput bytes;
    if (info[0].IsString()) {
      path = info[0].As<Napi::String>().Utf8Value();
    } else if (info[0].IsTypedArray() || info[0].IsDataView()) {
      Napi::Object view = Napi::Object::New(env);
      const size_t length = info[0].IsTypedArray() ? info[0].As<Napi::TypedArray>().ByteLength()
                                                   : info[0].As<Napi::DataView>().ByteLength();
      view.Set("dtype", "UINT8");
      Napi::Array shape = Napi::Array::New(env, 1);
      shape.Set(0u, Napi::Number::New(env, static_cast<double>(length)));
      view.Set("shape", shape);
      view.Set("data", info[0]);
      bytes = ReadInput(env, view, 0);
    } else {
      throw EngineError(code::kInvalidArgument, "load() takes a file path or the bytes of a TorchScript file");
    }
    std::vector<HostInput> warmup = info[2].IsArray() ? ReadInputs(env, info[2]) : std::vector<HostInput>{};
    const int runs = info[3].IsNumber() ? info[3].As<Napi::Number>().Int32Value() : 0;
    auto* job = new LoadJob(env, std::move(path), bytes, device, keepDevice, std::move(warmup), runs, execution);
    Napi::Promise promise = job->Promise();
    GetEnvData(env).completion->Submit(env, job->lane(), job);
    return promise;
  });
}

}  // namespace hearth
