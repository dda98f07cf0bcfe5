#include "arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common.h"

namespace hearth {

namespace {

constexpr unsigned kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// The mapping as an ArrayBuffer that unmaps it when collected (views over it keep it alive).
Napi::ArrayBuffer Wrap(Napi::Env env, void* base, size_t bytes) {
  return Napi::ArrayBuffer::New(
      env, base, bytes, [](Napi::Env, void* data, size_t* size) {
        munmap(data, *size);
        delete size;
      },
      new size_t(bytes));
}

void* MapShared(Napi::Env env, int fd, size_t bytes) {
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) throw MakeError(env, code::kArena, Errno("arena mmap"));
  return base;
}

}  // namespace

Napi::Value ArenaCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber() || info[0].As<Napi::Number>().DoubleValue() < 4096)
    throw MakeError(env, code::kInvalidArgument, "arenaCreate(bytes): bytes must be a number ≥ 4096");
  const auto bytes = static_cast<size_t>(info[0].As<Napi::Number>().Int64Value());
  const int fd = memfd_create("hearth-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) throw MakeError(env, code::kArena, Errno("arena memfd_create"));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0 || fcntl(fd, F_ADD_SEALS, kSeals) != 0) {
    const std::string why = Errno("arena size");
    close(fd);
    throw MakeError(env, code::kArena, why);
  }
  void* base = nullptr;
  try {
    base = MapShared(env, fd, bytes);
  } catch (...) {
    close(fd);
    throw;
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("fd", Napi::Number::New(env, fd));
  out.Set("buffer", Wrap(env, base, bytes));
  return out;
}

Napi::Value ArenaMap(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber()) throw MakeError(env, code::kInvalidArgument, "arenaMap(fd): fd must be a number");
  const int fd = info[0].As<Napi::Number>().Int32Value();
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0)
    throw MakeError(env, code::kInvalidArgument, "arenaMap: the fd is not an arena (a memfd sealed against shrinking)");
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) throw MakeError(env, code::kArena, Errno("arena fstat"));
  const auto bytes = static_cast<size_t>(st.st_size);
  void* base = MapShared(env, fd, bytes);
  // The mapping holds the file; the descriptor is no longer needed.
  close(fd);
  return Wrap(env, base, bytes);
}

}  // namespace hearth
