#include "model_ops.h"

#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/ir.h>

#include <string>
#include <unordered_set>
#include <vector>

#include "common.h"

namespace hearth {

namespace {

// The namespaces whose operators a model may call: the tensor library (aten), TorchScript's own
// (prim: control flow, lists, fork/wait…), and quantized inference (quantized, _quantized, and
// prepacked: XNNPACK's prepacked convolutions and linears of mobile-optimized models). Any other
// namespace is refused, custom ones (torch.ops.myns.*) included: fail closed.
constexpr const char* kAllowedNamespaces[] = {"aten", "prim", "quantized", "_quantized", "prepacked"};

// From LibTorch 1.13's operator registry (torch._C._jit_get_all_schemas(), 4165 schemas), the
// operators of those namespaces that do something besides compute: read, write or create files
// (from_file maps any path, and creates it with shared=True), talk to other processes (RPC), or
// call Python. Memory-unsafe tensor operators (as_strided…) stay: the runner's jail contains them.
struct Refused {
  const char* name;
  const char* what;
};
constexpr Refused kRefused[] = {
    {"aten::from_file", "reads, writes and creates files"},
    {"aten::save", "writes files"},
    {"prim::rpc_async", "calls other processes over the network"},
    {"prim::rpc_sync", "calls other processes over the network"},
    {"prim::rpc_remote", "calls other processes over the network"},
    {"prim::PythonOp", "calls Python"},
    {"prim::IgnoredPythonOp", "calls Python"},
};

std::string AllowedNamespaces() {
  std::string list;
  for (const char* ns : kAllowedNamespaces) list += (list.empty() ? "" : ", ") + std::string(ns);
  return list;
}

// Where a refused operator was met: the function, and the nested graphs on the way to it.
struct Found {
  std::string op;
  std::string why;
  std::vector<std::string> path;
};

bool Scan(torch::jit::Block* block, Found& found);

bool ScanGraph(const std::shared_ptr<torch::jit::Graph>& graph, const std::string& owner, Found& found) {
  if (!Scan(graph->block(), found)) return false;
  found.path.push_back(owner);
  return true;
}

// A node's nested code: its blocks (if, loop, closures) and any graph held in an attribute —
// prim::fork's Subgraph, prim::FusionGroup, prim::DifferentiableGraph, prim::TensorExprGroup…
bool ScanNested(torch::jit::Node* node, const std::string& kind, Found& found) {
  for (torch::jit::Block* inner : node->blocks()) {
    if (Scan(inner, found)) return true;
  }
  for (const torch::jit::Symbol name : node->attributeNames()) {
    const auto attributeKind = node->kindOf(name);
    if (attributeKind == torch::jit::AttributeKind::g && ScanGraph(node->g(name), kind, found)) return true;
    if (attributeKind != torch::jit::AttributeKind::gs) continue;
    for (const auto& graph : node->gs(name)) {
      if (ScanGraph(graph, kind, found)) return true;
    }
  }
  return false;
}

bool Scan(torch::jit::Block* block, Found& found) {
  for (torch::jit::Node* node : block->nodes()) {
    const std::string kind = node->kind().toQualString();
    const std::string why = OpRefusal(kind);
    if (!why.empty()) {
      found.op = kind;
      found.why = why;
      return true;
    }
    if (ScanNested(node, kind, found)) return true;
  }
  return false;
}

std::string Where(const Found& found, torch::jit::Function& f) {
  std::string method = f.qualname().qualifiedName();
  if (method.rfind("__torch__.", 0) == 0) method = method.substr(10);
  std::string where = "in " + method + "()";
  // Innermost first in found.path: said from the outside in.
  for (auto it = found.path.rbegin(); it != found.path.rend(); ++it) where += ", in the subgraph of " + *it;
  return where;
}

}  // namespace

std::string OpRefusal(const std::string& op) {
  for (const auto& r : kRefused) {
    if (op == r.name) return std::string("it ") + r.what;
  }
  const auto colon = op.find("::");
  const std::string ns = colon == std::string::npos ? op : op.substr(0, colon);
  for (const char* allowed : kAllowedNamespaces) {
    if (ns == allowed) return "";
  }
  return "an operator of namespace " + ns + ", which Hearth does not run: it runs those of " + AllowedNamespaces();
}

EngineError UnsafeModel(const std::string& op, const std::string& why, const std::string& where) {
  return EngineError(code::kModelUnsafe, "the model calls " + op + " (" + why + ") " + where +
                                             "; Hearth refuses models that reach files, the network or Python, or "
                                             "call operators outside its allow list (docs/isolation.md)");
}

void CheckCompilationUnitOps(torch::jit::CompilationUnit& cu) {
  // Compiling a function may define others (the classes and functions it names), so walk until a
  // pass meets none that is new.
  std::unordered_set<const torch::jit::Function*> seen;
  for (bool more = true; more;) {
    more = false;
    for (torch::jit::Function* f : cu.get_functions()) {
      if (!seen.insert(f).second || !f->isGraphFunction()) continue;
      more = true;
      Found found;
      if (Scan(torch::jit::toGraphFunction(*f).graph()->block(), found)) {
        throw UnsafeModel(found.op, found.why, Where(found, *f));
      }
    }
  }
}

void CheckModelOps(const torch::jit::Module& module) {
  CheckCompilationUnitOps(*module._ivalue()->compilation_unit());
}

}  // namespace hearth
