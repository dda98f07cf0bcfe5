// What the engine can run on: CPU memory, CUDA devices with their names and memory.
#pragma once

#include <napi.h>

namespace hearth {

// devices() → { torchVersion, cudaAvailable, cudaDeviceCount, devices: [{ id, kind, name,
// memoryTotalBytes, memoryFreeBytes }] }
Napi::Value Devices(const Napi::CallbackInfo& info);

}  // namespace hearth
