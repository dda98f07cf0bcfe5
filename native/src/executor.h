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
#include <memory>
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

  // JS thread: hands the job to a lane of the executor.
  void Submit(Napi::Env env, int lane, Job* job);

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

// A process-wide set of lanes, each one thread with its own FIFO queue, shared by every environment.
//
// Each model instance is pinned to one lane, so consecutive forwards of an instance run on the same
// thread. That matters on CPU: LibTorch's intra-op parallelism is an OpenMP team that belongs to the
// calling thread, and a team left idle keeps spinning for a while. Handing one instance's forwards to
// alternating threads leaves one team spinning on the cores the other needs (measured with a shared
// queue: 0.7-0.9x of python3-torch's throughput). On CUDA it is Triton's model: one thread per
// instance, each with its own stream.
//
// On CPU, lanes are also capped: each lane that runs a forward owns an OpenMP team of intra-op
// threads, and libgomp throttles every team's spin-wait to almost nothing once the threads of all
// teams outnumber the cores. ResNet-50 at batch 1, with its many short parallel regions, then ran at
// 0.65x of python3-torch after a second model had run on another lane. So CPU instances share the
// first floor(cores / intra-op threads) lanes, which is also all the CPU there is to share. CUDA
// instances each get a lane (a thread and a stream), as Triton gives each instance a thread.
//
// Intra-op parallelism is a per-thread setting, so each lane applies the configured value before its
// next job.
class Executor {
 public:
  static Executor& Get();

  // The lane for a new instance: on CPU the least used of the CPU lanes; on CUDA an unused lane
  // (one is added if none is free). A lane other than `avoid` (the lane of another instance of the
  // same model) is preferred: two instances of one model on one lane could never run together.
  int AcquireLane(bool cpu, int avoid = -1);
  void ReleaseLane(int lane);
  void Post(int lane, std::function<void()> task);

  void SetThreads(int count);  // grows the set of lanes to at least `count`
  int Threads();
  void SetIntraOpThreads(int count);
  int IntraOpThreads() const { return intra_op_.load(); }

 private:
  struct Lane {
    std::mutex mu;
    std::condition_variable ready;
    std::deque<std::function<void()>> tasks;
    int instances = 0;  // guarded by Executor::mu_
  };

  Executor();
  void Loop(Lane* lane);

  std::mutex mu_;
  std::vector<std::unique_ptr<Lane>> lanes_;  // never shrinks; a Lane's address is stable
  std::atomic<int> intra_op_;
  std::atomic<int> intra_op_generation_{0};
};

}  // namespace hearth
