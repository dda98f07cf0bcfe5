#include "shm.h"

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

struct Mapping {
  void* base;
  size_t length;
};

void Unmap(Napi::Env, void*, Mapping* m) {
  munmap(m->base, m->length);
  delete m;
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

Napi::Value MapSharedMemory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Guard(env, [&]() -> Napi::Value {
    if (!info[0].IsString() || !info[1].IsNumber() || !info[2].IsNumber()) {
      throw EngineError(code::kInvalidArgument, "mapSharedMemory(key, offset, byteSize)");
    }
    const std::string key = info[0].As<Napi::String>().Utf8Value();
    const double offsetValue = info[1].As<Napi::Number>().DoubleValue();
    const double sizeValue = info[2].As<Napi::Number>().DoubleValue();
    // The caller checks the key's form; this checks again: one leading '/', no other.
    if (key.size() < 2 || key[0] != '/' || key.find('/', 1) != std::string::npos) {
      throw EngineError(code::kInvalidArgument, "shared memory key must be \"/name\"");
    }
    if (!(offsetValue >= 0) || !(sizeValue > 0) || offsetValue + sizeValue > 9007199254740991.0) {
      throw EngineError(code::kInvalidArgument, "shared memory offset must be ≥ 0 and byte size > 0");
    }
    const auto offset = static_cast<size_t>(offsetValue);
    const auto size = static_cast<size_t>(sizeValue);
    const int fd = shm_open(key.c_str(), O_RDWR, 0);
    if (fd < 0) throw EngineError(code::kInvalidArgument, Errno("unable to open shared memory region \"" + key + "\""));
    struct stat st {};
    if (fstat(fd, &st) != 0) {
      close(fd);
      throw EngineError(code::kInvalidArgument, Errno("unable to read the size of shared memory region \"" + key + "\""));
    }
    if (!S_ISREG(st.st_mode)) {
      close(fd);
      throw EngineError(code::kInvalidArgument, "shared memory region \"" + key + "\" is not a shared memory segment");
    }
    if (static_cast<size_t>(st.st_size) < offset + size) {
      close(fd);
      throw EngineError(code::kInvalidArgument, "shared memory region \"" + key + "\" holds " + std::to_string(st.st_size) +
                                                    " bytes; offset " + std::to_string(offset) + " + byte size " + std::to_string(size) + " runs past it");
    }
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t start = offset - offset % page;
    const size_t length = size + (offset - start);
    void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(start));
    close(fd);
    if (base == MAP_FAILED) throw EngineError(code::kInvalidArgument, Errno("unable to map shared memory region \"" + key + "\""));
    auto* mapping = new Mapping{base, length};
    return Napi::ArrayBuffer::New(env, static_cast<char*>(base) + (offset - start), size, Unmap, mapping);
  });
}

}  // namespace hearth
