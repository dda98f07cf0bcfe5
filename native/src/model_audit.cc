#include "model_audit.h"

#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/frontend/source_range.h>
#include <torch/csrc/jit/serialization/import_read.h>
#include <torch/csrc/jit/serialization/import_source.h>

#include <algorithm>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "model_ops.h"

namespace hearth {

namespace {

// The source of a qualifier (__torch__.foo.bar) in the archive: code/__torch__/foo/bar.py, as
// torch::jit::load finds it.
std::shared_ptr<torch::jit::Source> FindSource(caffe2::serialize::PyTorchStreamReader& reader, const std::string& qualifier) {
  std::string path = "code/" + qualifier;
  std::replace(path.begin(), path.end(), '.', '/');
  path += ".py";
  if (!reader.hasRecord(path)) return nullptr;
  auto [data, size] = reader.getRecord(path);
  return std::make_shared<torch::jit::Source>(std::string(static_cast<const char*>(data.get()), size), path, 1);
}

}  // namespace

void AuditArchive(caffe2::serialize::PyTorchStreamReader& reader) {
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  std::vector<at::IValue> constants;
  torch::jit::SourceImporter importer(
      cu, &constants, [&](const std::string& qualifier) { return FindSource(reader, qualifier); }, reader.version());
  auto resolve = [&](const c10::QualifiedName& name) { return c10::StrongTypePtr(cu, importer.loadType(name)); };
  // The objects are made empty: nothing reads them, and no __setstate__ runs.
  auto make = [](const at::StrongTypePtr& type, const at::IValue&) {
    auto cls = type.type_->expect<at::ClassType>();
    return c10::ivalue::Object::create(type, cls->numAttributes());
  };
  const c10::optional<at::Device> cpu = at::Device(at::kCPU);
  if (reader.hasRecord("constants.pkl")) {
    constants = torch::jit::readArchiveAndTensors("constants", "", "", resolve, make, cpu, reader).toTupleRef().elements().vec();
  }
  torch::jit::readArchiveAndTensors("data", "", "", resolve, make, cpu, reader);
  CheckCompilationUnitOps(*cu);
}

void RefuseUnknownOp(const std::string& why) {
  static const std::regex opRe("Unknown builtin op: ([A-Za-z0-9_]+::[A-Za-z0-9_]+)");
  static const std::regex lineRe("File \"(code/[A-Za-z0-9_./]{1,200})\", line ([0-9]{1,9})");
  std::smatch op;
  if (!std::regex_search(why, op, opRe)) return;
  const std::string refusal = OpRefusal(op[1].str());
  if (refusal.empty()) return;
  std::smatch line;
  const std::string where = std::regex_search(why, line, lineRe) ? "at " + line[1].str() + ":" + line[2].str() : "in its code";
  throw UnsafeModel(op[1].str(), refusal, where);
}

}  // namespace hearth
