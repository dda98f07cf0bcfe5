#include "model.h"

#include <algorithm>

#include <string>
#include <vector>

#include "addon.h"
#include "common.h"
#include "model_jobs.h"

namespace hearth {

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
    // threads: intra-op threads for this forward alone (0: the lane's configured count).
    int threads = 0;
    if (info.Length() > 2 && info[2].IsNumber()) threads = std::max(0, info[2].As<Napi::Number>().Int32Value());
    // maxOutputBytes: what the outputs may take in all, checked before any is copied (0: no limit).
    uint64_t maxOutputBytes = 0;
    if (info.Length() > 3 && info[3].IsNumber()) {
      const double v = info[3].As<Napi::Number>().DoubleValue();
      if (v > 0 && v < 1.8e19) maxOutputBytes = static_cast<uint64_t>(v);
    }
    auto* job = new ForwardJob(env, instance_, std::move(inputs), std::move(dictKeys), threads, maxOutputBytes);
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
