#include "devices.h"

#include <torch/cuda.h>
#include <torch/version.h>

#include <fstream>
#include <string>

#ifdef HEARTH_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
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

}  // namespace hearth
