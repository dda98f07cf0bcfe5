#include "executor.h"

#include <ATen/Parallel.h>

#include <algorithm>

namespace hearth {

Completion::Completion(Napi::Env env) {
  tsfn_ = Tsfn::New(env, "hearth.completion", 0, 1);
  tsfn_.Unref(env);
}

Completion::~Completion() { WaitIdle(); }

void Completion::Submit(Napi::Env env, Job* job) {
  job->completion = this;
  if (pending_++ == 0) tsfn_.Ref(env);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++running_;
  }
  Executor::Get().Post([job] {
    job->Run();
    job->completion->Finish(job);
  });
}

void Completion::Finish(Job* job) {
  if (tsfn_.NonBlockingCall(job) != napi_ok) job->Abandon(), delete job;
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
  SetThreads(std::max(2u, std::thread::hardware_concurrency()));
}

void Executor::Post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  ready_.notify_one();
}

void Executor::SetThreads(int count) {
  std::lock_guard<std::mutex> lock(mu_);
  target_ = std::max(target_, std::max(1, count));  // grows only; idle threads cost nothing
  while (alive_ < target_) {
    std::thread(&Executor::Loop, this).detach();
    ++alive_;
  }
}

int Executor::Threads() {
  std::lock_guard<std::mutex> lock(mu_);
  return target_;
}

void Executor::SetIntraOpThreads(int count) {
  intra_op_.store(std::max(1, count));
  at::set_num_threads(std::max(1, count));
  intra_op_generation_.fetch_add(1);
}

void Executor::Loop() {
  int applied = -1;
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [&] { return !tasks_.empty(); });
      task = std::move(tasks_.front());
      tasks_.pop_front();
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
