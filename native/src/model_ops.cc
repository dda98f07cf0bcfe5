#include "model_ops.h"

#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/ir.h>

#include <string>

#include "common.h"

namespace hearth {

namespace {

// From LibTorch 1.13's operator registry (torch._C._jit_get_all_schemas()), the operators that do
// something besides compute: read, write or create files (from_file maps any path, and creates it
// with shared=True), talk to other processes over the network (RPC, process groups), or call
// Python. Memory-unsafe tensor operators (as_strided…) stay: the runner's jail contains them.
struct Refused {
  const char* name;  // an operator, or a namespace ending in "::"
  const char* what;
};
constexpr Refused kRefused[] = {
    {"aten::from_file", "reads, writes and creates files"},
    {"aten::save", "writes files"},
    {"prim::rpc_async", "calls other processes over the network"},
    {"prim::rpc_sync", "calls other processes over the network"},
    {"prim::rpc_remote", "calls other processes over the network"},
    {"c10d::", "talks to other processes over the network"},
    {"prim::PythonOp", "calls Python"},
};

const Refused* Find(const std::string& op) {
  for (const auto& r : kRefused) {
    const std::string name = r.name;
    if (name.back() == ':' ? op.rfind(name, 0) == 0 : op == name) return &r;
  }
  return nullptr;
}

const Refused* Scan(torch::jit::Block* block, std::string& op) {
  for (torch::jit::Node* node : block->nodes()) {
    const std::string kind = node->kind().toQualString();
    if (const Refused* r = Find(kind)) {
      op = kind;
      return r;
    }
    for (torch::jit::Block* inner : node->blocks()) {
      if (const Refused* r = Scan(inner, op)) return r;
    }
  }
  return nullptr;
}

}  // namespace

void CheckModelOps(const torch::jit::Module& module) {
  // Every function the archive defined: methods of its modules and classes, and free functions.
  const auto cu = module._ivalue()->compilation_unit();
  for (torch::jit::Function* f : cu->get_functions()) {
    if (!f->isGraphFunction()) continue;
    std::string op;
    const Refused* r = Scan(torch::jit::toGraphFunction(*f).graph()->block(), op);
    if (r == nullptr) continue;
    std::string method = f->qualname().qualifiedName();
    if (method.rfind("__torch__.", 0) == 0) method = method.substr(10);
    throw EngineError(code::kModelUnsafe, "the model calls " + op + " (it " + r->what + ") in " + method +
                                              "(); Hearth refuses models that reach files, the network or Python");
  }
}

}  // namespace hearth
