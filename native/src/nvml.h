// GPU metrics through NVML, loaded at run time (dlopen of libnvidia-ml.so.1): no build-time
// dependency on the driver, and nothing at all on a machine without one.
#pragma once

#include <napi.h>

namespace hearth {

// gpuMetrics() → [{ index, uuid, name, utilization (0..1), memoryTotalBytes, memoryUsedBytes,
// powerWatts }], each field present only where NVML answered it; [] where NVML does not load or
// sees no device.
Napi::Value GpuMetrics(const Napi::CallbackInfo& info);

}  // namespace hearth
