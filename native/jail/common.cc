// What every part of hearth-jail shares: how it fails (a message on stderr and kSetupFailed, which
// the node reads as a jail that could not be set up), and how it writes a kernel file.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "jail.h"

namespace jail {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "hearth-jail: %s\n", message.c_str());
  std::fflush(stderr);
  _exit(kSetupFailed);
}

bool WriteFile(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

}  // namespace jail
