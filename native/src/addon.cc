// Module entry: registers the engine's functions and its per-environment state.
#include "addon.h"

#include <ATen/Parallel.h>
#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <future>
#include <vector>

#include "arena.h"
#include "common.h"
#include "devices.h"
#include "nvml.h"
#include "json.h"
#ifdef HEARTH_WITH_IMAGE
#include "image_js.h"
#endif
#include "model.h"

namespace hearth {

EnvData& GetEnvData(Napi::Env env) { return *env.GetInstanceData<EnvData>(); }

namespace {

Napi::Value SetIntraOpThreads(const Napi::CallbackInfo& info) {
  if (!info[0].IsNumber() || info[0].As<Napi::Number>().Int32Value() < 1) {
    throw MakeError(info.Env(), code::kInvalidArgument, "intraOpThreads must be an integer ≥ 1");
  }
  Executor::Get().SetIntraOpThreads(info[0].As<Napi::Number>().Int32Value());
  return info.Env().Undefined();
}

Napi::Value SetExecutorThreads(const Napi::CallbackInfo& info) {
  if (!info[0].IsNumber() || info[0].As<Napi::Number>().Int32Value() < 1) {
    throw MakeError(info.Env(), code::kInvalidArgument, "executorThreads must be an integer ≥ 1");
  }
  Executor::Get().SetThreads(info[0].As<Napi::Number>().Int32Value());
  return info.Env().Undefined();
}

Napi::Value Threads(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  out.Set("intraOp", Napi::Number::New(env, Executor::Get().IntraOpThreads()));
  out.Set("executor", Napi::Number::New(env, Executor::Get().Threads()));
  return out;
}

void WaitForJobs(void* data) { static_cast<Completion*>(data)->WaitIdle(); }

// Forwards run on executor threads, which glibc serves from secondary malloc arenas. There, with
// the default dynamic thresholds, a model's multi-megabyte activations are mmap'd and unmapped (or
// trimmed) on every forward, and each forward pays for page faults on fresh memory: ResNet-50 at
// batch 1 ran at 0.7× of python3-torch, whose forwards run on the main thread's heap. A fixed mmap
// threshold at glibc's maximum (32 MiB) and a trim threshold above it keep freed activations for
// the next forward. HEARTH_MALLOC_TUNING=0, or glibc's own MALLOC_*_ variables, leave glibc as is.
void TuneMalloc() {
  const char* tuning = std::getenv("HEARTH_MALLOC_TUNING");
  if ((tuning != nullptr && std::string(tuning) == "0") || std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr ||
      std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr) {
    return;
  }
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
}

// A fresh process pays a page fault for each page of heap it touches first: a new runner loading
// ResNet-50 took 26k faults in its load and 12-19k in its first forward (load 107 ms and first
// forward 186-193 ms, against 67 and 143 in a process that had loaded it before). A spare runner
// touches `bytes` of heap on lane 0's thread — the lane a process's first CPU instance loads and
// runs on (Executor::AcquireLane), whose malloc arena its weights and activations come from — and
// frees it, so that load reuses pages already there (measured: 72 faults in the load, about 500 in
// the first forward; load 77 ms, forward 175 ms). Blocks the calling thread until done.
Napi::Value Prefault(const Napi::CallbackInfo& info) {
  if (!info[0].IsNumber() || info[0].As<Napi::Number>().Int64Value() < 0) {
    throw MakeError(info.Env(), code::kInvalidArgument, "prefault takes a number of bytes ≥ 0");
  }
  const size_t bytes = static_cast<size_t>(info[0].As<Napi::Number>().Int64Value());
  std::promise<void> touched;
  Executor::Get().Post(0, [bytes, &touched] {
    // Chunks under the mmap threshold (TuneMalloc) come from the lane's arena. A block kept after
    // each one — large enough to come from the arena's top, right after the chunk, and not from a
    // free list — stops the freed chunks from merging back into a free heap or the top, which
    // glibc would unmap or trim. The blocks (64 KiB per 15 MiB) stay allocated for good.
    constexpr size_t kChunk = 15 << 20;
    constexpr size_t kPin = 64 << 10;
    std::vector<void*> chunks;
    for (size_t at = 0; at < bytes; at += kChunk) {
      void* chunk = std::malloc(kChunk);
      if (chunk == nullptr || std::malloc(kPin) == nullptr) {
        std::free(chunk);
        break;
      }
      // One write per page, through volatile: writes to memory that is then freed are dead code
      // the compiler may drop.
      auto* page = static_cast<volatile char*>(chunk);
      for (size_t i = 0; i < kChunk; i += 4096) page[i] = 0;
      chunks.push_back(chunk);
    }
    for (void* chunk : chunks) std::free(chunk);
    touched.set_value();
  });
  touched.get_future().wait();
  return info.Env().Undefined();
}

// Ends the process at once (_exit): no teardown. A runner leaves this way when its channel closes or
// a forward hangs: Node's teardown would wait for a running forward (WaitForJobs) and end hook
// threads that may be inside an isolate, which isolated-vm answers by aborting the process.
Napi::Value ExitNow(const Napi::CallbackInfo& info) {
  const int code = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 0;
  std::fflush(nullptr);
  _exit(code);
}

// The calling thread's CPU time so far, µs (CLOCK_THREAD_CPUTIME_ID): what a hook's work cost its
// thread, which a busy machine's wall clock overstates by the time the thread waited for a core.
Napi::Value ThreadCpuUs(const Napi::CallbackInfo& info) {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return Napi::Number::New(info.Env(), static_cast<double>(now.tv_sec) * 1e6 + static_cast<double>(now.tv_nsec) / 1e3);
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  TuneMalloc();
  auto* data = new EnvData();
  data->modelConstructor = Napi::Persistent(NativeModel::Define(env));
  data->completion = std::make_unique<Completion>(env);
  // Registered after the completion's thread-safe function, so it runs before that is closed:
  // teardown waits for this environment's running jobs, which read its memory.
  napi_add_env_cleanup_hook(env, WaitForJobs, data->completion.get());
  env.SetInstanceData<EnvData>(data);

  exports.Set("load", Napi::Function::New<Load>(env, "load"));
  exports.Set("devices", Napi::Function::New<Devices>(env, "devices"));
  exports.Set("gpuMetrics", Napi::Function::New<GpuMetrics>(env, "gpuMetrics"));
  exports.Set("setCudaMemoryFraction", Napi::Function::New<SetCudaMemoryFraction>(env, "setCudaMemoryFraction"));
  exports.Set("cudaMemory", Napi::Function::New<CudaMemory>(env, "cudaMemory"));
  exports.Set("setIntraOpThreads", Napi::Function::New<SetIntraOpThreads>(env, "setIntraOpThreads"));
  exports.Set("setExecutorThreads", Napi::Function::New<SetExecutorThreads>(env, "setExecutorThreads"));
  exports.Set("threads", Napi::Function::New<Threads>(env, "threads"));
  exports.Set("prefault", Napi::Function::New<Prefault>(env, "prefault"));
  exports.Set("exitNow", Napi::Function::New<ExitNow>(env, "exitNow"));
  exports.Set("threadCpuUs", Napi::Function::New<ThreadCpuUs>(env, "threadCpuUs"));
  exports.Set("arenaCreate", Napi::Function::New<ArenaCreate>(env, "arenaCreate"));
  exports.Set("arenaMap", Napi::Function::New<ArenaMap>(env, "arenaMap"));
#ifdef HEARTH_WITH_SIMDJSON
  exports.Set("parseInferJson", Napi::Function::New<ParseInferJson>(env, "parseInferJson"));
  exports.Set("parseInferJsonAsync", Napi::Function::New<ParseInferJsonAsync>(env, "parseInferJsonAsync"));
  exports.Set("parseJsonPacked", Napi::Function::New<ParseJsonPacked>(env, "parseJsonPacked"));
#endif
#ifdef HEARTH_WITH_IMAGE
  RegisterImage(env, exports);
#endif
  return exports;
}

}  // namespace

}  // namespace hearth

static Napi::Object InitHearth(Napi::Env env, Napi::Object exports) { return hearth::Init(env, exports); }

NODE_API_MODULE(hearth_native, InitHearth)
