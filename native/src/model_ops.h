// The operators a TorchScript model may call: checked before its code runs (model_audit.h) and
// again once it is loaded, against an allow list — the aten, prim and quantized namespaces, less
// the operators that reach outside the model (files, the network, Python). A model is refused for
// any other operator anywhere in its code — every method of every module and class in its
// archive, __setstate__ included, every function they reach, and every graph nested in a node
// (prim::fork's subgraph, fusion groups, differentiable graphs) — whether or not forward() would
// call it.
#pragma once

#include <torch/script.h>

#include <string>

#include "common.h"

namespace hearth {

// Why Hearth refuses the operator `op` ("aten::from_file"), as "it reads, writes and creates
// files"; empty where it is allowed.
std::string OpRefusal(const std::string& op);

// The error for a model that calls a refused operator: `why` from OpRefusal, `where` ("in
// Model.forward()") the method or source line.
EngineError UnsafeModel(const std::string& op, const std::string& why, const std::string& where);

// Throws EngineError(ERR_MODEL_UNSAFE) naming the first refused operator, the method that calls it
// and the nested graph it sits in, if any. Compiles every function of `cu` (they compile lazily),
// and those that compiling defines, but runs none of them.
void CheckCompilationUnitOps(torch::jit::CompilationUnit& cu);

void CheckModelOps(const torch::jit::Module& module);

}  // namespace hearth
