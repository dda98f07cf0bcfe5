// Tensors across the JS boundary.
//
// Inputs enter LibTorch with no copy on CPU: `from_blob` over the memory of the caller's typed
// array, which is pinned by a reference until the forward settles. Outputs come back as typed
// arrays with at most one copy: a CPU output that owns its storage becomes an external ArrayBuffer
// over that storage (zero copies); one that aliases an input or a weight, or is not contiguous, is
// cloned once; a CUDA output is copied once to the host and then handed over without another copy.
#pragma once

#include <napi.h>
#include <torch/script.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hearth {

// Wire names of the dtypes the engine takes: BOOL UINT8 INT8 INT16 INT32 INT64 FP16 BF16 FP32 FP64.
bool ParseDType(const std::string& name, at::ScalarType* out);
const char* DTypeName(at::ScalarType type);

// An input read on the JS thread: a view of JS memory kept alive by `ref`. A BYTES input (`isBytes`)
// holds Triton's serialized strings (a 4-byte little-endian length before each element) and goes
// to forward() as a List[str], as Triton's PyTorch backend passes TYPE_STRING inputs.
struct HostInput {
  at::ScalarType type = at::kFloat;
  std::vector<int64_t> shape;
  void* data = nullptr;
  size_t bytes = 0;
  napi_ref ref = nullptr;
  bool isBytes = false;
};

// Reads `{dtype, shape, data}`; checks that data's byte length is shape × dtype size.
HostInput ReadInput(Napi::Env env, const Napi::Value& value, size_t index);
void ReleaseInput(napi_env env, HostInput& input);

// A tensor over the input's memory, on the CPU (no copy). Not for BYTES inputs.
at::Tensor WrapInput(const HostInput& input);

// The strings of serialized BYTES parts, in order (one List[str] for a batch's parts).
c10::List<std::string> ReadStrings(const std::vector<HostInput>& parts);

// One output tensor, host-resident and contiguous, ready to hand to JS.
// A List[str] output is serialized into `tensor` (UINT8) with `strings` elements.
struct HostOutput {
  std::string name;
  at::Tensor tensor;
  int64_t strings = -1;
};

// What a forward's outputs may take in all (0: no limit), and what they took so far.
struct OutputBudget {
  uint64_t limit = 0;
  uint64_t used = 0;
};

// Flattens what forward returned (tensor, tuple, list, dict of str → tensor, nested) into named
// host tensors. `kind` is "tensor", "tuple", "list" or "dict". Storages listed in `aliased` (inputs
// and weights) are cloned so JS never holds memory it does not own. Each output's bytes (numel ×
// element size, whatever its strides) count against `maxBytes` (0: no limit) before it is copied or
// made contiguous; past it, ERR_OUTPUT_SIZE and nothing is copied.
void CollectOutputs(const c10::IValue& value, const std::function<bool(const void*)>& aliased, uint64_t maxBytes,
                    std::vector<HostOutput>* out, std::string* kind);

Napi::Object ToJs(Napi::Env env, HostOutput& output);

}  // namespace hearth
