// The addon's own threads, where loads and forwards run, and the way results get back to JS.
//
// Lifetimes. A Job is created on the JS thread, runs on an executor thread, and is settled back on
// the JS thread of the environment that created it (main thread or a worker thread), exactly once,
// through that environment's thread-safe function. While any job of an environment runs, the
// environment's `Completion` keeps the event loop referenced; when the environment is torn down
// (process exit, worker termination) it first waits until none of its jobs is still running, because
// a running forward reads input memory that belongs to that environment's heap. Jobs that finish
// after teardown began are deleted without touching JS.
//
// Executor threads never make N-API calls.
#pragma once

#include <napi.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hearth {

class Completion;

class Job {
 public:
  virtual ~Job() = default;
  // On an executor thread: the native work. Must not throw and must not call N-API.
  virtual void Run() = 0;
  // On the JS thread: resolve or reject, and release JS references.
  virtual void Settle(Napi::Env env) = 0;
  // Teardown: the environment is gone; free native state only.
  virtual void Abandon() {}

  Completion* completion = nullptr;
};

// One per environment: carries finished jobs back to its JS thread.
class Completion {
 public:
  explicit Completion(Napi::Env env);
  ~Completion();

  // JS thread: hands the job to the executor.
  void Submit(Napi::Env env, Job* job);

  // Executor thread: the job's Run() returned.
  void Finish(Job* job);

  // Blocks until no job of this environment is running (teardown).
  void WaitIdle();

 private:
  static void CallJs(Napi::Env env, Napi::Function, std::nullptr_t*, Job* job);
  using Tsfn = Napi::TypedThreadSafeFunction<std::nullptr_t, Job, &Completion::CallJs>;

  Tsfn tsfn_;
  int pending_ = 0;  // JS thread only: submitted, not yet settled
  std::mutex mu_;
  std::condition_variable idle_;
  int running_ = 0;  // submitted, Run() not yet returned
};

// A process-wide pool of threads shared by every environment. Intra-op parallelism (LibTorch's
// OpenMP threads) is a per-thread setting, so each executor thread applies the configured value
// before its next job.
class Executor {
 public:
  static Executor& Get();

  void Post(std::function<void()> task);
  void SetThreads(int count);  // grows the pool to at least `count`
  int Threads();
  void SetIntraOpThreads(int count);
  int IntraOpThreads() const { return intra_op_.load(); }

 private:
  Executor();
  void Loop();

  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  int target_ = 0;
  int alive_ = 0;
  std::atomic<int> intra_op_;
  std::atomic<int> intra_op_generation_{0};
};

}  // namespace hearth
