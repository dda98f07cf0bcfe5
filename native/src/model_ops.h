// The operators a TorchScript module can call, checked at load against those that reach outside
// the model: files, the network, Python. A model is refused for any of them in any of its code —
// every method of every module and class in its archive, __setstate__ included — whether or not
// forward() would call it.
#pragma once

#include <torch/script.h>

#include <string>

namespace hearth {

// Throws EngineError(ERR_MODEL_UNSAFE) naming the first such operator and the method that calls it.
void CheckModelOps(const torch::jit::Module& module);

}  // namespace hearth
