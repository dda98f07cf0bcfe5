// The two jobs a model runs on its executor lane: loading (LoadJob) and a forward (ForwardJob).
//
// Lifetimes (see executor.h for a Job's): each job is created on the JS thread with the JS memory
// it reads pinned (HostInput refs), runs on the lane without touching N-API, and is settled back on
// the JS thread, which resolves or rejects its promise and releases the pins. A ForwardJob holds its
// InstanceState (and so the weights) until it is settled, whatever JS does with the model meanwhile.
#pragma once

#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "executor.h"
#include "instance_state.h"
#include "tensor.h"

namespace hearth {

// JS thread: an array of `{dtype, shape, data}` tensors, each pinned (released again if one fails).
std::vector<HostInput> ReadInputs(Napi::Env env, const Napi::Value& value);

// Loads a model and warms up its first instance; resolves with that instance's NativeModel.
class LoadJob : public Job {
 public:
  LoadJob(Napi::Env env, std::string path, HostInput bytes, c10::Device device, bool keepDevice,
          std::vector<HostInput> warmup, int runs, ExecutionOptions execution);
  ~LoadJob() override;

  // The load and warm-up run on the lane the first instance will use.
  int lane() const { return lane_; }
  Napi::Promise Promise() const { return deferred_.Promise(); }

  void Run() override;
  void Settle(Napi::Env env) override;

 private:
  Napi::Promise::Deferred deferred_;
  std::string path_;
  HostInput bytes_;
  c10::Device device_;
  bool keepDevice_;
  std::vector<HostInput> warmup_;
  int runs_;
  ExecutionOptions execution_;
  int lane_;
  std::shared_ptr<InstanceState> instance_;
  Failure failure_;
};

// Inputs arrive as parts: each input is one or more pieces (the requests of a batch) that are
// concatenated along the batch dimension on the lane, so the event loop never copies a batch.
using InputParts = std::vector<std::vector<HostInput>>;

// One forward of an instance; resolves with `{kind, outputs}`. Outputs that alias an input (JS
// memory) or a weight are cloned; the rest are handed to JS without a copy.
class ForwardJob : public Job {
 public:
  // `dictKeys`: the inputs go to forward() as one Dict[str, Tensor] under these names. `threads` > 0:
  // intra-op threads for this forward only; the lane's configured count is restored after it.
  // `maxOutputBytes` > 0: the most its outputs may take in all (CollectOutputs).
  ForwardJob(Napi::Env env, std::shared_ptr<InstanceState> instance, InputParts inputs, std::vector<std::string> dictKeys,
             int threads = 0, uint64_t maxOutputBytes = 0);

  Napi::Promise Promise() const { return deferred_.Promise(); }

  void Run() override;
  void Settle(Napi::Env env) override;

 private:
  Napi::Promise::Deferred deferred_;
  std::shared_ptr<InstanceState> instance_;
  InputParts inputs_;
  std::vector<std::string> dictKeys_;
  int threads_;
  uint64_t maxOutputBytes_;
  std::vector<HostOutput> outputs_;
  std::string kind_;
  Failure failure_;
};

}  // namespace hearth
