#include "executor.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdlib>

namespace hearth {

Completion::Completion(Napi::Env env) {
  tsfn_ = Tsfn::New(env, "hearth.completion", 0, 1);
  tsfn_.Unref(env);
}

Completion::~Completion() { WaitIdle(); }

void Completion::Submit(Napi::Env env, int lane, Job* job) {
  job->completion = this;
  if (pending_++ == 0) tsfn_.Ref(env);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++running_;
  }
  Executor::Get().Post(lane, [job] {
    job->Run();
    job->completion->Finish(job);
  });
}

void Completion::Finish(Job* job) {
  if (tsfn_.NonBlockingCall(job) != napi_ok) {  // the environment is closing
    job->Abandon();
    delete job;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (--running_ == 0) idle_.notify_all();
}

void Completion::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return running_ == 0; });
}

void Completion::CallJs(Napi::Env env, Napi::Function, std::nullptr_t*, Job* job) {
  if (env == nullptr) {  // the environment is being torn down
    job->Abandon();
    delete job;
    return;
  }
  Completion* self = job->completion;
  {
    Napi::HandleScope scope(env);
    try {
      job->Settle(env);
    } catch (...) {
      // Settle only fails if the environment is shutting down; the job is freed either way.
    }
  }
  delete job;
  if (--self->pending_ == 0) self->tsfn_.Unref(env);
}

Executor& Executor::Get() {
  // Leaked on purpose: threads may still be parked when static destructors run at exit.
  static Executor* executor = new Executor();
  return *executor;
}

// LibTorch's own default can be 1 where it cannot read the CPU topology (this VM): start from the
// number of cores the process may use, and let setIntraOpThreads override it.
Executor::Executor() : intra_op_(static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {
  const char* lanes = std::getenv("HEARTH_EXECUTOR_THREADS");
  SetThreads(lanes != nullptr && std::atoi(lanes) > 0 ? std::atoi(lanes)
                                                     : static_cast<int>(std::max(2u, std::thread::hardware_concurrency())));
}

int Executor::AcquireLane(bool cpu, int avoid) {
  std::lock_guard<std::mutex> lock(mu_);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int candidates = static_cast<int>(lanes_.size());
  if (cpu) candidates = std::min(candidates, std::max(1, cores / intra_op_.load()));
  int best = -1;
  for (int i = 0; i < candidates; ++i) {
    if (i == avoid && candidates > 1) continue;
    if (best < 0 || lanes_[i]->instances < lanes_[best]->instances) best = i;
  }
  if (!cpu && lanes_[best]->instances > 0) {
    lanes_.push_back(std::make_unique<Lane>());
    std::thread(&Executor::Loop, this, lanes_.back().get()).detach();
    best = static_cast<int>(lanes_.size()) - 1;
  }
  ++lanes_[best]->instances;
  return best;
}

void Executor::ReleaseLane(int lane) {
  std::lock_guard<std::mutex> lock(mu_);
  --lanes_[lane]->instances;
}

void Executor::Post(int lane, std::function<void()> task) {
  Lane* l;
  {
    std::lock_guard<std::mutex> lock(mu_);
    l = lanes_[lane].get();
  }
  {
    std::lock_guard<std::mutex> lock(l->mu);
    l->tasks.push_back(std::move(task));
  }
  l->ready.notify_one();
}

void Executor::SetThreads(int count) {
  std::lock_guard<std::mutex> lock(mu_);
  while (static_cast<int>(lanes_.size()) < count) {
    lanes_.push_back(std::make_unique<Lane>());
    std::thread(&Executor::Loop, this, lanes_.back().get()).detach();
  }
}

int Executor::Threads() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(lanes_.size());
}

void Executor::SetIntraOpThreads(int count) {
  intra_op_.store(std::max(1, count));
  at::set_num_threads(std::max(1, count));
  intra_op_generation_.fetch_add(1);
}

void Executor::Loop(Lane* lane) {
  int applied = -1;
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(lane->mu);
      lane->ready.wait(lock, [&] { return !lane->tasks.empty(); });
      task = std::move(lane->tasks.front());
      lane->tasks.pop_front();
    }
    const int generation = intra_op_generation_.load();
    if (generation != applied) {
      at::set_num_threads(intra_op_.load());
      applied = generation;
    }
    task();
  }
}

}  // namespace hearth
