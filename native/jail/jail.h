// hearth-jail: runs one program (a Hearth runner) inside the kernel's walls.
//
// It is a program of its own, exec'd by the node, because two of its layers must be in place
// before the runner has a second thread: landlock_restrict_self() binds only the calling thread
// (and the threads it starts later), and unshare(CLONE_NEWUSER) refuses a multithreaded process.
// Node starts its threads before any JavaScript runs, so no addon call could apply them.
//
// What it does is told by its arguments (the policy lives in runtime/runner/walls/jail.ts); each layer
// it applies, or could not, is reported to the node in one channel frame before the program runs.
#pragma once

#include <sys/types.h>

#include <cstdint>
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
  std::vector<std::string> cgroupMounts; // where each one's hierarchy is mounted (same order)
  int oomScoreAdj = 0;                   // the runner's, set before it runs (0: left as it is)
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
  int oomScoreAdj = 0;  // as set (0: not)
  std::vector<std::string> notes;  // why a layer is missing
};

// Who the runner is: its uid and gid outside (the host's), and inside its user namespace.
struct Ids {
  uid_t hostUid;
  gid_t hostGid;
  uid_t insideUid;
  gid_t insideGid;
};

// The exit status of a jail that could not be set up as asked.
constexpr int kSetupFailed = 125;

// The parts, a file each: main.cc runs them in order.

// common.cc: how the jail fails, and how it writes a kernel file.
std::string Errno(const std::string& what);
[[noreturn]] void Die(const std::string& message);
bool WriteFile(const std::string& path, const std::string& text);

// options.cc: the arguments the node gives, read (a bad one is fatal).
Options Parse(int argc, char** argv);

// ids.cc: the runner's uid and gid (a root node's locked from its range), their maps into its user
// namespace (empty, or why they could not be written), and its capabilities (all permitted, or none).
Ids PickIds(const Options& o, bool root, Report& r);
std::string MapIds(pid_t pid, const Ids& ids, bool root);
void SetCapabilities(bool effective);

// mounts.cc: inside its new mount namespace, its private /tmp, /dev/shm and /proc, and under
// /sys/fs/cgroup its own cgroups alone.
void SetUpMounts(const Options& o, Report& r);

// report.cc: what was applied, sent as one frame of the node's channel.
void SendReport(int fd, const Report& r);

// supervise.cc: the process that stays outside. It starts the child (in new namespaces where it
// can: `pid` 0 in the child), then releases it (its id maps and cgroups written), and ends as it ends.
struct Started {
  long pid = -1;
  bool ns = false;      // new namespaces
  bool userns = false;  // a user namespace among them
};
// On a `relay` (>= 0: forked from the runner template), it sends the runner's wait status there
// instead of ending as the runner ends, and kills the runner should the relay close first.
Started StartChild(const Options& o, bool root, Report& r);
[[noreturn]] void Supervise(const Options& o, const Ids& ids, const Started& child, bool root, const int go[2],
                            const int err[2], int relay);
// Ends this process as a wait status says: the same exit code, or the same signal.
[[noreturn]] void Mirror(int status);
// The whole of it: its uid, the child started and supervised. Returns in the child only, once its
// walls are up: its scratch folder, and `err` (still open) for a failure it still meets.
struct Launched {
  std::string scratch;
  int err;
};
Launched Launch(const Options& o, int relay);

// child.cc: the child, once released: its uid, mounts and capabilities, Landlock and seccomp, the
// report; returns its scratch folder ("" for none). A failure is written to `err` (its parent says
// it) and exits.
std::string Child(const Options& o, Report r, const Ids& ids, bool ns, bool userns, int go, int err);
[[noreturn]] void Fail(int err, const std::string& why);
// TMPDIR and the caches' folders in the scratch folder, in the environment.
void ScratchEnv(const std::string& scratch);
// The program, exec'd with that environment.
[[noreturn]] void Exec(const Options& o, const std::string& scratch, int err);

// handoff.cc: hearth-jail's handoff to the runner template, one SOCK_SEQPACKET message: its
// arguments (from the options on), its environment, and its descriptors 0-2 and 3, 4 where open.
struct Handoff {
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::vector<int> fds;           // the sender's, as sent; the receiver's, as received
  std::vector<uint32_t> numbers;  // received: the number each had in hearth-jail
};
bool SendHandoff(int sock, const Handoff& h, std::string& why);
bool ReceiveHandoff(int sock, Handoff& h, std::string& why);
// relay.cc: hearth-jail --template=SOCKET: hands its runner to the template and ends as it ends.
[[noreturn]] void Relay(const std::string& socketPath, int argc, char** argv);

// Landlock (landlock.cc): the ABI the kernel offers (0: none), and the ruleset applied to this
// thread and its future threads. Returns the ABI applied, or 0 with `why` set.
int LandlockAbi();
int ApplyLandlock(const Options& o, const std::string& scratch, std::string& why);

// seccomp (seccomp.cc): the deny list, applied with no_new_privs. False with `why` set on failure.
bool ApplySeccomp(std::string& why);

// The program's interpreter (PT_INTERP of an ELF file), which execve opens too; empty if none.
std::string ElfInterpreter(const std::string& path);

}  // namespace jail
