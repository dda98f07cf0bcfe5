#include "common.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>

namespace hearth {

Napi::Error MakeError(Napi::Env env, const char* code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  return error;
}

Failure CaptureCurrentException(const char* fallback) {
  try {
    throw;
  } catch (const EngineError& e) {
    return {e.code(), e.what()};
  } catch (const c10::Error& e) {
    return {fallback, e.what_without_backtrace()};
  } catch (const std::exception& e) {
    return {fallback, e.what()};
  } catch (...) {
    return {fallback, "unknown native exception"};
  }
}

static bool Contains(const std::string& haystack, const char* needle) {
  return haystack.find(needle) != std::string::npos;
}

const char* ClassifyForwardError(const std::string& raw) {
  std::string m(raw);
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
  // "expected scalar type Float but found Double", "mat1 and mat2 must have the same dtype",
  // "Input type (double) and bias type (float) should be the same", "not implemented for 'Half'".
  if (Contains(m, "scalar type") || Contains(m, "dtype") || Contains(m, "type (") ||
      Contains(m, "not implemented for '") || Contains(m, "expected object of scalar")) {
    return code::kDType;
  }
  // "mat1 and mat2 shapes cannot be multiplied", "expected input[1, 4, 224, 224] to have 3
  // channels", "Expected 4-dimensional input", "size mismatch", "the size of tensor a".
  if (Contains(m, "shape") || Contains(m, "size") || Contains(m, "dimension") ||
      Contains(m, "channels") || Contains(m, "-d input") || Contains(m, "out of range")) {
    return code::kShape;
  }
  return code::kForward;
}

EngineError ForwardError(const std::string& raw) {
  std::string message = raw;
  while (!message.empty() && message.back() == '\n') message.pop_back();
  const size_t traceback = message.find("Traceback of TorchScript");
  if (traceback != std::string::npos) {
    // The interpreter's message ends with "RuntimeError: <what went wrong>".
    const size_t last = message.rfind('\n');
    std::string headline = last == std::string::npos ? message : message.substr(last + 1);
    const size_t colon = headline.find(": ");
    if (colon != std::string::npos && headline.compare(0, colon, "RuntimeError") == 0) headline = headline.substr(colon + 2);
    message = headline + "\n" + message.substr(traceback, last - traceback);
  }
  const size_t end = message.find('\n');
  return EngineError(ClassifyForwardError(message.substr(0, end)), message);
}

}  // namespace hearth
