#include "devices.h"

#include <torch/cuda.h>
#include <torch/version.h>

#include <fstream>
#include <string>

#ifdef HEARTH_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <torch/torch.h>
#endif

namespace hearth {

namespace {

// Reads a "Key:   123 kB" line of /proc/meminfo, in bytes.
double MemInfo(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string name, unit;
  double value = 0;
  while (in >> name >> value >> unit) {
    if (name == key + ":") return value * 1024;
  }
  return 0;
}

std::string CpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "cpu";
}

}  // namespace

Napi::Value Devices(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  out.Set("torchVersion", Napi::String::New(env, TORCH_VERSION));
  const bool cuda = torch::cuda::is_available();
  const size_t count = cuda ? torch::cuda::device_count() : 0;
  out.Set("cudaAvailable", Napi::Boolean::New(env, cuda));
  out.Set("cudaDeviceCount", Napi::Number::New(env, static_cast<double>(count)));
#ifdef HEARTH_WITH_CUDA
  out.Set("cudaBuild", Napi::Boolean::New(env, true));
#else
  out.Set("cudaBuild", Napi::Boolean::New(env, false));
#endif

  Napi::Array devices = Napi::Array::New(env);
  Napi::Object cpu = Napi::Object::New(env);
  cpu.Set("id", "cpu");
  cpu.Set("kind", "cpu");
  cpu.Set("name", CpuName());
  cpu.Set("memoryTotalBytes", MemInfo("MemTotal"));
  cpu.Set("memoryFreeBytes", MemInfo("MemAvailable"));
  devices.Set(0u, cpu);
#ifdef HEARTH_WITH_CUDA
  for (size_t i = 0; i < count; ++i) {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(i));
    cudaDeviceProp prop;
    size_t freeBytes = 0, totalBytes = 0;
    Napi::Object d = Napi::Object::New(env);
    d.Set("id", "cuda:" + std::to_string(i));
    d.Set("kind", "cuda");
    d.Set("name", cudaGetDeviceProperties(&prop, static_cast<int>(i)) == cudaSuccess ? std::string(prop.name) : std::string("cuda"));
    if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess) cudaGetLastError();
    d.Set("memoryTotalBytes", static_cast<double>(totalBytes));
    d.Set("memoryFreeBytes", static_cast<double>(freeBytes));
    devices.Set(static_cast<uint32_t>(i + 1), d);
  }
#endif
  out.Set("devices", devices);
  return out;
}

Napi::Value SetCudaMemoryFraction(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const double fraction = info[0].As<Napi::Number>().DoubleValue();
  const int index = info[1].As<Napi::Number>().Int32Value();
#ifdef HEARTH_WITH_CUDA
  if (index < 0 || static_cast<size_t>(index) >= torch::cuda::device_count())
    throw Napi::RangeError::New(env, "no CUDA device " + std::to_string(index));
  try {
    // The caching allocator is set up on the first allocation on the device: make one first.
    torch::empty({1}, torch::TensorOptions().device(torch::kCUDA, static_cast<c10::DeviceIndex>(index)));
    c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, static_cast<c10::DeviceIndex>(index));
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, std::string("cannot cap CUDA memory: ") + e.what());
  }
  return env.Undefined();
#else
  (void)fraction;
  (void)index;
  throw Napi::Error::New(env, "this build of the addon has no CUDA: a GPU memory cap cannot apply");
#endif
}

Napi::Value CudaMemory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
#ifdef HEARTH_WITH_CUDA
  const int index = info[0].As<Napi::Number>().Int32Value();
  if (index < 0 || static_cast<size_t>(index) >= torch::cuda::device_count()) return env.Undefined();
  // [0] is the aggregate of the stat types (StatType::AGGREGATE).
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
  Napi::Object out = Napi::Object::New(env);
  out.Set("allocatedBytes", Napi::Number::New(env, static_cast<double>(stats.allocated_bytes[0].current)));
  out.Set("reservedBytes", Napi::Number::New(env, static_cast<double>(stats.reserved_bytes[0].current)));
  return out;
#else
  return env.Undefined();
#endif
}

}  // namespace hearth
