// What the engine can run on: CPU memory, CUDA devices with their names and memory.
#pragma once

#include <napi.h>

namespace hearth {

// devices() → { torchVersion, cudaAvailable, cudaDeviceCount, devices: [{ id, kind, name,
// memoryTotalBytes, memoryFreeBytes }] }
Napi::Value Devices(const Napi::CallbackInfo& info);

// setCudaMemoryFraction(fraction, deviceIndex): caps this process's CUDA caching allocator on the
// device (allocations past it fail as out of memory). Throws in a build without CUDA.
Napi::Value SetCudaMemoryFraction(const Napi::CallbackInfo& info);

// cudaMemory(deviceIndex) → { allocatedBytes, reservedBytes } of this process's caching allocator
// on the device; undefined in a build without CUDA.
Napi::Value CudaMemory(const Napi::CallbackInfo& info);

}  // namespace hearth
