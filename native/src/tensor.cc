#include "tensor.h"

#include <cmath>
#include <cstring>

#include "common.h"

namespace hearth {

namespace {

struct DTypeEntry {
  const char* name;
  at::ScalarType type;
  napi_typedarray_type array;
};

constexpr DTypeEntry kDTypes[] = {
    {"BOOL", at::kBool, napi_uint8_array},      {"UINT8", at::kByte, napi_uint8_array},
    {"INT8", at::kChar, napi_int8_array},       {"INT16", at::kShort, napi_int16_array},
    {"INT32", at::kInt, napi_int32_array},      {"INT64", at::kLong, napi_bigint64_array},
    {"FP16", at::kHalf, napi_uint16_array},     {"BF16", at::kBFloat16, napi_uint16_array},
    {"FP32", at::kFloat, napi_float32_array},   {"FP64", at::kDouble, napi_float64_array},
};

const DTypeEntry* FindByType(at::ScalarType type) {
  for (const auto& e : kDTypes) {
    if (e.type == type) return &e;
  }
  return nullptr;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Zero-length views can have a null data pointer; from_blob needs a valid one.
alignas(16) char kEmpty[16];

void DeleteTensor(Napi::Env, void*, at::Tensor* tensor) { delete tensor; }

}  // namespace

bool ParseDType(const std::string& name, at::ScalarType* out) {
  for (const auto& e : kDTypes) {
    if (name == e.name) {
      *out = e.type;
      return true;
    }
  }
  return false;
}

const char* DTypeName(at::ScalarType type) {
  const DTypeEntry* e = FindByType(type);
  return e ? e->name : c10::toString(type);
}

namespace {

// Where a TypedArray's or DataView's bytes start, and how many: as napi says for a TypedArray,
// so also for a view of a SharedArrayBuffer (a hook pool's exchange, runtime/hooks/exchange.ts),
// which Napi::ArrayBuffer refuses.
void* DataOf(const Napi::Value& data, const std::string& where, size_t* bytes) {
  void* ptr = nullptr;
  if (data.IsTypedArray()) {
    *bytes = data.As<Napi::TypedArray>().ByteLength();
    if (napi_get_typedarray_info(data.Env(), data, nullptr, nullptr, &ptr, nullptr, nullptr) != napi_ok) {
      throw EngineError(code::kInvalidArgument, where + ": data could not be read");
    }
    return ptr;
  }
  if (napi_get_dataview_info(data.Env(), data, bytes, &ptr, nullptr, nullptr) != napi_ok) {
    throw EngineError(code::kInvalidArgument, where + ": data could not be read");
  }
  return ptr;
}

}  // namespace

HostInput ReadInput(Napi::Env env, const Napi::Value& value, size_t index) {
  const std::string where = "input " + std::to_string(index);
  if (!value.IsObject()) throw EngineError(code::kInvalidArgument, where + " must be an object {dtype, shape, data}");
  Napi::Object obj = value.As<Napi::Object>();
  HostInput input;

  Napi::Value dtype = obj.Get("dtype");
  if (dtype.IsString() && dtype.As<Napi::String>().Utf8Value() == "BYTES") {
    input.isBytes = true;
    input.type = at::kByte;
  } else if (!dtype.IsString() || !ParseDType(dtype.As<Napi::String>().Utf8Value(), &input.type)) {
    throw EngineError(code::kDType, where + ": dtype must be one of BOOL, UINT8, INT8, INT16, INT32, "
                                            "INT64, FP16, BF16, FP32, FP64, BYTES");
  }

  Napi::Value shape = obj.Get("shape");
  if (!shape.IsArray()) throw EngineError(code::kInvalidArgument, where + ": shape must be an array of integers");
  Napi::Array dims = shape.As<Napi::Array>();
  int64_t numel = 1;
  for (uint32_t i = 0; i < dims.Length(); ++i) {
    Napi::Value d = dims.Get(i);
    double v = d.IsNumber() ? d.As<Napi::Number>().DoubleValue() : -1;
    if (!(v >= 0) || std::floor(v) != v || v > 9007199254740991.0) {
      throw EngineError(code::kShape, where + ": shape[" + std::to_string(i) + "] must be a non-negative integer");
    }
    input.shape.push_back(static_cast<int64_t>(v));
    numel *= static_cast<int64_t>(v);
  }

  Napi::Value data = obj.Get("data");
  if (!data.IsTypedArray() && !data.IsDataView()) {
    throw EngineError(code::kInvalidArgument, where + ": data must be a TypedArray or DataView");
  }
  size_t bytes = 0;
  void* ptr = DataOf(data, where, &bytes);
  if (input.isBytes) {
    // Walk the lengths: the elements must fill the data exactly and number shape's product.
    const auto* p = static_cast<const uint8_t*>(ptr);
    size_t at = 0;
    int64_t count = 0;
    while (at < bytes) {
      if (bytes - at < 4) throw EngineError(code::kShape, where + ": BYTES element " + std::to_string(count) + " has no room for its 4-byte length");
      const uint32_t length = static_cast<uint32_t>(p[at]) | (static_cast<uint32_t>(p[at + 1]) << 8) |
                              (static_cast<uint32_t>(p[at + 2]) << 16) | (static_cast<uint32_t>(p[at + 3]) << 24);
      if (bytes - at - 4 < length) throw EngineError(code::kShape, where + ": BYTES element " + std::to_string(count) + " runs past the data");
      at += 4 + length;
      ++count;
    }
    if (count != numel) {
      throw EngineError(code::kShape, where + ": data holds " + std::to_string(count) + " BYTES element(s) but shape " +
                                          ShapeString(input.shape) + " needs " + std::to_string(numel));
    }
  }
  const size_t expected = input.isBytes ? bytes : static_cast<size_t>(numel) * c10::elementSize(input.type);
  if (bytes != expected) {
    throw EngineError(code::kShape, where + ": data has " + std::to_string(bytes) + " bytes but shape " +
                                        ShapeString(input.shape) + " of " + DTypeName(input.type) +
                                        " needs " + std::to_string(expected));
  }
  const size_t align = c10::elementSize(input.type);
  if (bytes > 0 && reinterpret_cast<uintptr_t>(ptr) % align != 0) {
    throw EngineError(code::kInvalidArgument, where + ": data is not aligned to its element size");
  }
  input.data = bytes ? ptr : kEmpty;
  input.bytes = bytes;
  napi_status st = napi_create_reference(env, data, 1, &input.ref);
  NAPI_THROW_IF_FAILED(env, st, input);
  return input;
}

void ReleaseInput(napi_env env, HostInput& input) {
  if (input.ref != nullptr) {
    napi_delete_reference(env, input.ref);
    input.ref = nullptr;
  }
}

at::Tensor WrapInput(const HostInput& input) {
  return torch::from_blob(input.data, input.shape, at::TensorOptions().dtype(input.type));
}

c10::List<std::string> ReadStrings(const std::vector<HostInput>& parts) {
  c10::List<std::string> out;
  for (const auto& part : parts) {
    const auto* p = static_cast<const uint8_t*>(part.data);
    for (size_t at = 0; at + 4 <= part.bytes;) {  // validated by ReadInput
      const uint32_t length = static_cast<uint32_t>(p[at]) | (static_cast<uint32_t>(p[at + 1]) << 8) |
                              (static_cast<uint32_t>(p[at + 2]) << 16) | (static_cast<uint32_t>(p[at + 3]) << 24);
      if (part.bytes - at - 4 < length) throw EngineError(code::kShape, "a BYTES element runs past its data");
      out.push_back(std::string(reinterpret_cast<const char*>(p + at + 4), length));
      at += 4 + length;
    }
  }
  return out;
}

namespace {

// Takes numel × elementSize from what the outputs may still take, before any of them is copied: an
// FP32 output that is one element expanded (stride 0) to 10^8 is 4 bytes of storage, 400 MB once contiguous.
void Spend(OutputBudget* budget, uint64_t numel, size_t elementSize, const std::string& name, const char* dtype) {
  if (budget->limit == 0) return;
  const uint64_t left = budget->limit - budget->used;
  if (numel > left / elementSize) {
    const double bytes = static_cast<double>(numel) * static_cast<double>(elementSize);
    throw EngineError(code::kOutputSize, "output " + name + " is " + std::to_string(numel) + " element(s) of " + dtype +
                                             " (" + std::to_string(static_cast<uint64_t>(bytes)) +
                                             " bytes): the outputs would pass the " + std::to_string(budget->limit) +
                                             " bytes this call may return (limits.maxResponseMb)");
  }
  budget->used += numel * elementSize;
}

void AddOutput(const at::Tensor& raw, const std::string& name, const std::function<bool(const void*)>& aliased,
               OutputBudget* budget, std::vector<HostOutput>* out) {
  const DTypeEntry* entry = FindByType(raw.scalar_type());
  if (entry == nullptr) {
    throw EngineError(code::kOutput, "output " + name + " has dtype " + c10::toString(raw.scalar_type()) +
                                         ", which Hearth cannot return");
  }
  Spend(budget, static_cast<uint64_t>(raw.numel()), c10::elementSize(raw.scalar_type()), name, entry->name);
  at::Tensor t;
  if (!raw.device().is_cpu()) {
    // device → host: the one copy, straight into contiguous host memory.
    t = raw.to(at::kCPU, raw.scalar_type(), false, false, at::MemoryFormat::Contiguous);
  } else {
    const bool owns = raw.is_contiguous() && raw.storage_offset() == 0 &&
                      !aliased(raw.storage().data()) &&
                      raw.storage().nbytes() == static_cast<size_t>(raw.nbytes());
    t = owns ? raw : raw.clone(at::MemoryFormat::Contiguous);  // host: the one copy
  }
  out->push_back({name, std::move(t)});
}

// A List[str] output, serialized as Triton's BYTES (a 4-byte little-endian length before each).
void AddStrings(const c10::List<c10::IValue>& list, const std::string& name, OutputBudget* budget,
                std::vector<HostOutput>* out) {
  size_t total = 0;
  for (size_t i = 0; i < list.size(); ++i) total += 4 + list.get(i).toStringRef().size();
  Spend(budget, total, 1, name, "BYTES");
  at::Tensor t = at::empty({static_cast<int64_t>(total)}, at::TensorOptions().dtype(at::kByte));
  auto* p = t.data_ptr<uint8_t>();
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string& s = list.get(i).toStringRef();
    const auto length = static_cast<uint32_t>(s.size());
    for (int b = 0; b < 4; ++b) *p++ = static_cast<uint8_t>(length >> (8 * b));
    std::memcpy(p, s.data(), s.size());
    p += s.size();
  }
  out->push_back({name, std::move(t), static_cast<int64_t>(list.size())});
}

void Collect(const c10::IValue& v, const std::string& name, const std::function<bool(const void*)>& aliased,
             OutputBudget* budget, std::vector<HostOutput>* out) {
  const auto prefix = [&](const std::string& key) { return name.empty() ? key : name + "." + key; };
  if (v.isList() && v.toList().elementType()->kind() == c10::TypeKind::StringType) {
    AddStrings(v.toList(), name.empty() ? "0" : name, budget, out);
  } else if (v.isTensor()) {
    AddOutput(v.toTensor(), name.empty() ? "0" : name, aliased, budget, out);
  } else if (v.isTuple()) {
    const auto& items = v.toTupleRef().elements();
    for (size_t i = 0; i < items.size(); ++i) Collect(items[i], prefix(std::to_string(i)), aliased, budget, out);
  } else if (v.isList()) {
    auto list = v.toList();
    for (size_t i = 0; i < list.size(); ++i) Collect(list.get(i), prefix(std::to_string(i)), aliased, budget, out);
  } else if (v.isGenericDict()) {
    for (const auto& item : v.toGenericDict()) {
      if (!item.key().isString()) throw EngineError(code::kOutput, "output dict keys must be strings");
      Collect(item.value(), prefix(item.key().toStringRef()), aliased, budget, out);
    }
  } else {
    throw EngineError(code::kOutput, "output " + (name.empty() ? std::string("0") : name) + " is a " +
                                         v.tagKind() + "; Hearth returns tensors, tuples, lists and dicts of them");
  }
}

}  // namespace

void CollectOutputs(const c10::IValue& value, const std::function<bool(const void*)>& aliased, uint64_t maxBytes,
                    std::vector<HostOutput>* out, std::string* kind) {
  OutputBudget budget{maxBytes, 0};
  *kind = value.isTensor() ? "tensor" : value.isTuple() ? "tuple" : value.isList() ? "list"
          : value.isGenericDict() ? "dict" : value.tagKind();
  Collect(value, "", aliased, &budget, out);
}

Napi::Object ToJs(Napi::Env env, HostOutput& output) {
  at::Tensor& t = output.tensor;
  const DTypeEntry* entry = FindByType(t.scalar_type());
  const bool strings = output.strings >= 0;
  const size_t bytes = t.nbytes();
  Napi::ArrayBuffer buffer;
  if (bytes == 0) {
    buffer = Napi::ArrayBuffer::New(env, 0);
  } else {
    // The ArrayBuffer borrows the tensor's storage; the tensor lives until the buffer is collected.
    auto* owner = new at::Tensor(t);
    buffer = Napi::ArrayBuffer::New(env, owner->data_ptr(), bytes, DeleteTensor, owner);
  }
  const size_t length = bytes / c10::elementSize(t.scalar_type());
  napi_value array;
  napi_status st = napi_create_typedarray(env, entry->array, length, buffer, 0, &array);
  NAPI_THROW_IF_FAILED(env, st, Napi::Object());

  Napi::Array shape = Napi::Array::New(env, strings ? 1 : t.dim());
  if (strings) shape.Set(0u, Napi::Number::New(env, static_cast<double>(output.strings)));
  for (int64_t i = 0; !strings && i < t.dim(); ++i) shape.Set(static_cast<uint32_t>(i), Napi::Number::New(env, static_cast<double>(t.size(i))));
  Napi::Object obj = Napi::Object::New(env);
  obj.Set("name", Napi::String::New(env, output.name));
  obj.Set("dtype", Napi::String::New(env, strings ? "BYTES" : entry->name));
  obj.Set("shape", shape);
  obj.Set("data", Napi::Value(env, array));
  t = at::Tensor();
  return obj;
}

}  // namespace hearth
