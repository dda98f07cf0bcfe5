// Error codes and conversion helpers shared by every part of the addon.
//
// Every failure that crosses into JS carries one of these stable codes; runtime/engine maps them to
// typed errors in one place (fromNativeCode). TypeScript never matches on message text.
#pragma once

#include <napi.h>

#include <stdexcept>
#include <string>

namespace hearth {

namespace code {
constexpr const char* kModelLoad = "ERR_MODEL_LOAD";
constexpr const char* kModelUnsafe = "ERR_MODEL_UNSAFE";
constexpr const char* kDevice = "ERR_DEVICE";
constexpr const char* kInvalidArgument = "ERR_INVALID_ARGUMENT";
constexpr const char* kInputCount = "ERR_INPUT_COUNT";
constexpr const char* kShape = "ERR_SHAPE";
constexpr const char* kDType = "ERR_DTYPE";
constexpr const char* kForward = "ERR_FORWARD";
constexpr const char* kOutput = "ERR_OUTPUT";
constexpr const char* kOutputSize = "ERR_OUTPUT_SIZE";
constexpr const char* kDisposed = "ERR_DISPOSED";
constexpr const char* kArena = "ERR_ARENA";
// An image that does not decode, or a step past the image limits: the caller's input.
constexpr const char* kImage = "ERR_IMAGE";
}  // namespace code

// An engine failure with its stable code; thrown on any thread, caught at the JS boundary.
class EngineError : public std::runtime_error {
 public:
  EngineError(const char* code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  const char* code() const { return code_; }

 private:
  const char* code_;
};

// A code and message captured on a native thread, raised later on the JS thread.
struct Failure {
  const char* code = nullptr;
  std::string message;
  explicit operator bool() const { return code != nullptr; }
};

Napi::Error MakeError(Napi::Env env, const char* code, const std::string& message);

// Captures the in-flight exception (call inside a catch block). LibTorch's c10::Error is reported
// without its C++ backtrace; `fallback` is the code for anything that is not an EngineError.
Failure CaptureCurrentException(const char* fallback);

// Sorts a LibTorch error raised while a model ran into shape, dtype or a generic forward failure.
// LibTorch has no error taxonomy, so this is the one place that reads its messages.
const char* ClassifyForwardError(const std::string& message);

// A failure raised by the model while it ran: classified, with LibTorch's last line (the actual
// error) first and the TorchScript traceback after it.
EngineError ForwardError(const std::string& raw);

// Runs `body` and converts any C++ exception to a JS exception with a code: nothing may reach
// std::terminate from a JS entry point.
template <typename F>
auto Guard(Napi::Env env, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Napi::Error&) {
    throw;
  } catch (...) {
    Failure f = CaptureCurrentException(code::kInvalidArgument);
    throw MakeError(env, f.code, f.message);
  }
}

}  // namespace hearth
