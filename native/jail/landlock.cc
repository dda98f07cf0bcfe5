// Landlock: the runner reads only what it is told, writes only its scratch, executes only its own
// program, binds and connects no TCP port, and signals or reaches (abstract Unix sockets) nothing
// outside its own domain. Unprivileged; works inside containers.
//
// The structures and constants are declared here rather than taken from <linux/landlock.h>, whose
// copy on a build machine may predate the ABI the running kernel offers (Debian 12's stops at 2).
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "jail.h"

namespace jail {

namespace {

struct RulesetAttr {
  uint64_t handledAccessFs;
  uint64_t handledAccessNet;
  uint64_t scoped;
};

struct PathBeneathAttr {
  uint64_t allowedAccess;
  int32_t parentFd;
} __attribute__((packed));

constexpr uint32_t kCreateRulesetVersion = 1u << 0;
constexpr int kRulePathBeneath = 1;

// Filesystem rights, by the ABI that introduced them.
constexpr uint64_t kExecute = 1ull << 0;
constexpr uint64_t kWriteFile = 1ull << 1;
constexpr uint64_t kReadFile = 1ull << 2;
constexpr uint64_t kReadDir = 1ull << 3;
constexpr uint64_t kRemoveDir = 1ull << 4;
constexpr uint64_t kRemoveFile = 1ull << 5;
constexpr uint64_t kMakeChar = 1ull << 6;
constexpr uint64_t kMakeDir = 1ull << 7;
constexpr uint64_t kMakeReg = 1ull << 8;
constexpr uint64_t kMakeSock = 1ull << 9;
constexpr uint64_t kMakeFifo = 1ull << 10;
constexpr uint64_t kMakeBlock = 1ull << 11;
constexpr uint64_t kMakeSym = 1ull << 12;
constexpr uint64_t kRefer = 1ull << 13;     // ABI 2
constexpr uint64_t kTruncate = 1ull << 14;  // ABI 3
constexpr uint64_t kIoctlDev = 1ull << 15;  // ABI 5
constexpr uint64_t kAbi1Fs = (1ull << 13) - 1;

constexpr uint64_t kNetBindTcp = 1ull << 0;     // ABI 4
constexpr uint64_t kNetConnectTcp = 1ull << 1;  // ABI 4
constexpr uint64_t kScopeAbstractUnix = 1ull << 0;  // ABI 6
constexpr uint64_t kScopeSignal = 1ull << 1;        // ABI 6

// Rights that apply to a file (the others only to folders).
constexpr uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

int CreateRuleset(const RulesetAttr* attr, size_t size, uint32_t flags) {
  return static_cast<int>(syscall(__NR_landlock_create_ruleset, attr, size, flags));
}

}  // namespace

int LandlockAbi() {
  const int abi = CreateRuleset(nullptr, 0, kCreateRulesetVersion);
  return abi < 0 ? 0 : abi;
}

int ApplyLandlock(const Options& o, const std::string& scratch, std::string& why) {
  const int abi = LandlockAbi();
  if (abi < 1) {
    why = "landlock: the kernel offers none (Linux 5.13+ with lsm=landlock)";
    return 0;
  }
  uint64_t fs = kAbi1Fs;
  if (abi >= 2) fs |= kRefer;
  if (abi >= 3) fs |= kTruncate;
  if (abi >= 5) fs |= kIoctlDev;
  RulesetAttr attr{fs, abi >= 4 ? kNetBindTcp | kNetConnectTcp : 0, abi >= 6 ? kScopeAbstractUnix | kScopeSignal : 0};
  const int ruleset = CreateRuleset(&attr, sizeof attr, 0);
  if (ruleset < 0) {
    why = Errno("landlock: create_ruleset");
    return 0;
  }
  const uint64_t read = kReadFile | kReadDir;
  const uint64_t write = kWriteFile | kRemoveDir | kRemoveFile | kMakeDir | kMakeReg | kMakeFifo | kMakeSym |
                         kRefer | kTruncate;
  bool ok = true;
  // A path that does not exist on this machine is skipped: the list is the same everywhere.
  const auto allow = [&](const std::string& path, uint64_t rights) {
    const int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) {
      if (errno != ENOENT && errno != ENOTDIR) {
        why = Errno("landlock: " + path);
        ok = false;
      }
      return;
    }
    struct stat st {};
    fstat(fd, &st);
    PathBeneathAttr rule{rights & fs & (S_ISDIR(st.st_mode) ? ~0ull : kFileRights), fd};
    if (rule.allowedAccess != 0 && syscall(__NR_landlock_add_rule, ruleset, kRulePathBeneath, &rule, 0) != 0) {
      why = Errno("landlock: add_rule " + path);
      ok = false;
    }
    close(fd);
  };
  for (const auto& p : o.readOnly) allow(p, read);
  for (const auto& p : o.readWrite) allow(p, read | write);
  if (!scratch.empty()) allow(scratch, read | write);
  for (const auto& p : o.devices) allow(p, kReadFile | kWriteFile | kIoctlDev);
  // The program and its interpreter: execve opens both.
  const std::string& program = o.argv.at(0);
  allow(program, kReadFile | kExecute);
  const std::string interpreter = ElfInterpreter(program);
  if (!interpreter.empty()) allow(interpreter, kReadFile | kExecute);
  if (ok && syscall(__NR_landlock_restrict_self, ruleset, 0) != 0) {
    why = Errno("landlock: restrict_self");
    ok = false;
  }
  close(ruleset);
  return ok ? abi : 0;
}

std::string ElfInterpreter(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out;
  Elf64_Ehdr eh{};
  if (pread(fd, &eh, sizeof eh, 0) == static_cast<ssize_t>(sizeof eh) && std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
      eh.e_ident[EI_CLASS] == ELFCLASS64) {
    for (int i = 0; i < eh.e_phnum && out.empty(); ++i) {
      Elf64_Phdr ph{};
      if (pread(fd, &ph, sizeof ph, static_cast<off_t>(eh.e_phoff + i * sizeof ph)) != static_cast<ssize_t>(sizeof ph)) break;
      if (ph.p_type != PT_INTERP || ph.p_filesz == 0 || ph.p_filesz > 4096) continue;
      std::string name(ph.p_filesz, '\0');
      if (pread(fd, name.data(), ph.p_filesz, static_cast<off_t>(ph.p_offset)) == static_cast<ssize_t>(ph.p_filesz)) {
        out = name.c_str();
      }
    }
  }
  close(fd);
  return out;
}

}  // namespace jail
