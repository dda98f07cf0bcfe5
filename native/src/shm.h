// POSIX shared memory for Triton's system shared memory extension: a region a client registers
// (shm_open key, offset, size) mapped into the process as an external ArrayBuffer. The mapping is
// released when the buffer is collected; nothing is created, only existing segments are opened.
#pragma once

#include <napi.h>

namespace hearth {

// mapSharedMemory(key: string, offset: number, byteSize: number): ArrayBuffer
Napi::Value MapSharedMemory(const Napi::CallbackInfo& info);

}  // namespace hearth
