#include "nvml.h"

#include <dlfcn.h>

#include <mutex>

namespace hearth {

namespace {

// NVML's C ABI, as nvml.h declares it (only what is read here): every call returns 0 on success.
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceSt*;
struct NvmlUtilization {
  unsigned int gpu;  // percent of the last sample period a kernel ran
  unsigned int memory;
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct Nvml {
  bool ok = false;
  NvmlReturn (*deviceCount)(unsigned int*) = nullptr;
  NvmlReturn (*handleByIndex)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*) = nullptr;
  NvmlReturn (*power)(NvmlDevice, unsigned int*) = nullptr;  // milliwatts
  NvmlReturn (*uuid)(NvmlDevice, char*, unsigned int) = nullptr;
  NvmlReturn (*name)(NvmlDevice, char*, unsigned int) = nullptr;
};

template <typename F>
bool Symbol(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

// Loaded and initialised once; a machine without the driver's library gets ok = false, silently.
const Nvml& Library() {
  static Nvml nvml;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    NvmlReturn (*init)() = nullptr;
    Nvml n;
    if (!Symbol(lib, "nvmlInit_v2", &init) || !Symbol(lib, "nvmlDeviceGetCount_v2", &n.deviceCount) ||
        !Symbol(lib, "nvmlDeviceGetHandleByIndex_v2", &n.handleByIndex) ||
        !Symbol(lib, "nvmlDeviceGetUtilizationRates", &n.utilization) ||
        !Symbol(lib, "nvmlDeviceGetMemoryInfo", &n.memory) || !Symbol(lib, "nvmlDeviceGetPowerUsage", &n.power) ||
        !Symbol(lib, "nvmlDeviceGetUUID", &n.uuid) || !Symbol(lib, "nvmlDeviceGetName", &n.name) || init() != 0) {
      dlclose(lib);
      return;
    }
    n.ok = true;
    nvml = n;
  });
  return nvml;
}

}  // namespace

Napi::Value GpuMetrics(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env);
  const Nvml& nvml = Library();
  unsigned int count = 0;
  if (!nvml.ok || nvml.deviceCount(&count) != 0) return out;
  for (unsigned int i = 0; i < count; i++) {
    NvmlDevice device = nullptr;
    if (nvml.handleByIndex(i, &device) != 0) continue;
    Napi::Object gpu = Napi::Object::New(env);
    gpu.Set("index", Napi::Number::New(env, i));
    char text[96] = {0};
    if (nvml.uuid(device, text, sizeof text) == 0) gpu.Set("uuid", Napi::String::New(env, text));
    if (nvml.name(device, text, sizeof text) == 0) gpu.Set("name", Napi::String::New(env, text));
    NvmlUtilization utilization{};
    if (nvml.utilization(device, &utilization) == 0)
      gpu.Set("utilization", Napi::Number::New(env, utilization.gpu / 100.0));
    NvmlMemory memory{};
    if (nvml.memory(device, &memory) == 0) {
      gpu.Set("memoryTotalBytes", Napi::Number::New(env, static_cast<double>(memory.total)));
      gpu.Set("memoryUsedBytes", Napi::Number::New(env, static_cast<double>(memory.used)));
    }
    unsigned int milliwatts = 0;
    if (nvml.power(device, &milliwatts) == 0) gpu.Set("powerWatts", Napi::Number::New(env, milliwatts / 1000.0));
    out.Set(out.Length(), gpu);
  }
  return out;
}

}  // namespace hearth
