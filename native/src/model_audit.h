// The operator check before any of a model's code runs. Loading a TorchScript archive runs code:
// unpickling its objects calls each class's __setstate__. This compiles the archive's code as the
// load would — every class its objects are made of, and every function and class that code names —
// makes the objects without calling __setstate__, and checks every operator (model_ops.h). Only a
// model that passes is then loaded for real.
#pragma once

#include <caffe2/serialize/inline_container.h>

#include <string>

namespace hearth {

// Throws EngineError(ERR_MODEL_UNSAFE) for a refused operator; LibTorch's own errors (not a
// TorchScript archive, an unknown operator) propagate, as torch::jit::load would raise them.
void AuditArchive(caffe2::serialize::PyTorchStreamReader& reader);

// For LibTorch's "Unknown builtin op: myns::op" (a custom operator this node does not have): throws
// EngineError(ERR_MODEL_UNSAFE) where the operator's namespace is refused anyway, naming it and the
// archive's source line. Returns for anything else (an aten operator of a newer PyTorch…).
void RefuseUnknownOp(const std::string& why);

}  // namespace hearth
