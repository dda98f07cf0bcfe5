// hearth-jail: runs one program (a Hearth runner) inside the kernel's walls.
//
// It is a program of its own, exec'd by the node, because two of its layers must be in place
// before the runner has a second thread: landlock_restrict_self() binds only the calling thread
// (and the threads it starts later), and unshare(CLONE_NEWUSER) refuses a multithreaded process.
// Node starts its threads before any JavaScript runs, so no addon call could apply them.
//
// What it does is told by its arguments (the policy lives in runtime/runner/jail.ts); each layer
// it applies, or could not, is reported to the node in one channel frame before the program runs.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace jail {

// What the node asks for.
struct Options {
  bool namespaces = false;  // user, mount, pid, net, ipc, uts, cgroup namespaces
  bool uid = false;         // a uid of its own
  bool landlock = false;
  bool seccomp = false;
  bool require = false;     // a layer asked for but not applied is fatal

  // The uid: root picks a free one from [uidFirst, uidFirst + uidCount), holding a lock file for it
  // under lockDir while the runner lives (unique on the host); a node that is not root keeps its own
  // uid outside and shows `uidFirst + uidHint % uidCount` inside its user namespace.
  uid_t uidFirst = 0;
  uint32_t uidCount = 0;
  uint32_t uidHint = 0;
  gid_t gid = 65534;
  std::string lockDir;

  std::string home;                   // the runner's own folder (made its uid's)
  uint64_t tmpBytes = 64ull << 20;    // private /tmp and /dev/shm, each
  std::vector<std::string> readOnly;  // Landlock: read (files and folders beneath)
  std::vector<std::string> readWrite;
  std::vector<std::string> devices;   // read, write and ioctl on device files
  std::vector<std::string> cgroupProcs;  // cgroup.procs files to join before the program runs
  int reportFd = -1;

  std::vector<std::string> argv;  // the program and its arguments
};

// What was applied (for the report), filled in as the runner is set up.
struct Report {
  pid_t pid = 0;  // the runner's pid as the node sees it
  uid_t uid = 0;  // its uid outside
  std::string namespaces;  // comma-separated, empty: none
  bool privateProc = false;
  bool ownUid = false;
  int landlockAbi = 0;  // 0: not applied
  bool seccomp = false;
  bool cgroup = false;
  std::vector<std::string> notes;  // why a layer is missing
};

// Landlock (landlock.cc): the ABI the kernel offers (0: none), and the ruleset applied to this
// thread and its future threads. Returns the ABI applied, or 0 with `why` set.
int LandlockAbi();
int ApplyLandlock(const Options& o, const std::string& scratch, std::string& why);

// seccomp (seccomp.cc): the deny list, applied with no_new_privs. False with `why` set on failure.
bool ApplySeccomp(std::string& why);

// The program's interpreter (PT_INTERP of an ELF file), which execve opens too; empty if none.
std::string ElfInterpreter(const std::string& path);

}  // namespace jail
