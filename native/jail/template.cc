// The runner template: libhearth-template.so, preloaded into a Node process that the node starts
// with HEARTH_TEMPLATE_SOCKET set (runtime/runner/supervision/runner-template.ts). Its constructor
// runs before Node's main, while the process has one thread, and never returns there: it loads the
// runtime's libraries (HEARTH_TEMPLATE_PRELOAD: the addon, with LibTorch), then serves hearth-jail's
// handoffs, forking for each a supervisor that makes the runner exactly as hearth-jail does
// (Launch: new namespaces, uid, mounts, Landlock, seccomp, cgroups). The runner, once its walls are
// up, does not exec Node: it returns from this constructor into Node's main, with the handoff's
// arguments and environment and LibTorch already loaded — what an exec would have paid again.
//
// What a runner gets of the template: a copy-on-write copy of its memory (the libraries and their
// static state; the template reads no request, secret or other runner's data) and its address
// layout, which every runner of a node shares, as Android's zygote children do. No descriptor: the
// runner closes all but the handoff's 0-4.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "jail.h"

extern char** environ;

namespace jail {
namespace {

int Threads() {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  while (const dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

// Only hearth-jail (beside this library), started by this template's node, may hand over a runner:
// a peer of the same uid whose parent is the node and whose program is hearth-jail. (A runner cannot
// even ask: its seccomp filter refuses socket().)
bool FromNode(int conn, pid_t node, const std::string& jail) {
  ucred peer{};
  socklen_t size = sizeof peer;
  if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || peer.uid != geteuid()) return false;
  char path[64], stat[512], exe[4096];
  std::snprintf(path, sizeof path, "/proc/%d/exe", peer.pid);
  const ssize_t length = readlink(path, exe, sizeof exe - 1);
  if (length <= 0 || std::string(exe, static_cast<size_t>(length)) != jail) return false;
  std::snprintf(path, sizeof path, "/proc/%d/stat", peer.pid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = read(fd, stat, sizeof stat - 1);
  close(fd);
  if (n <= 0) return false;
  stat[n] = '\0';
  const char* after = std::strrchr(stat, ')');
  int ppid = 0;
  return after && std::sscanf(after, ") %*c %d", &ppid) == 1 && ppid == node;
}

// hearth-jail beside this library (the one the node runs), resolved as /proc/PID/exe shows it.
std::string JailBeside() {
  Dl_info self{};
  dladdr(reinterpret_cast<void*>(&JailBeside), &self);
  const std::string library = self.dli_fname ? self.dli_fname : "";
  char resolved[4096];
  const std::string jail = library.substr(0, library.rfind('/') + 1) + "hearth-jail";
  return realpath(jail.c_str(), resolved) ? resolved : jail;
}

// A handoff must ask for every wall (what the host lacks, hearth-jail says; `auto` goes on without).
void RequireWalls(const Options& o) {
  if (!o.namespaces || !o.landlock || !o.seccomp || o.reportFd < 0)
    Die("the runner template forks jailed runners only (--namespaces --landlock --seccomp --report-fd)");
}

// The handoff's descriptors under the numbers they had in hearth-jail (0-4), the relay's moved above
// them; every other descriptor of the template closed.
int Install(const Handoff& h, int relay) {
  std::vector<int> high;
  for (const int fd : h.fds) high.push_back(fcntl(fd, F_DUPFD_CLOEXEC, 64));
  relay = fcntl(relay, F_DUPFD_CLOEXEC, 64 + static_cast<int>(h.fds.size()));
  close_range(0, 63, 0);
  for (size_t i = 0; i < high.size(); ++i) dup2(high[i], static_cast<int>(h.numbers[i]));
  for (const int fd : high) close(fd);
  close_range(static_cast<unsigned>(relay) + 1, ~0U, 0);
  close_range(5, static_cast<unsigned>(relay) - 1, 0);
  return relay;
}

// Node's main reads argv as the template's process got it: the runner's arguments take their place
// (as many: the node starts the template with a runner's command line), contiguous as libuv expects,
// written over the template's own where they fit (the node pads those), so that /proc/PID/cmdline
// and ps show the runner's.
void SetArgv(int argc, char** argv, const std::vector<std::string>& args, int err) {
  if (static_cast<int>(args.size()) != argc)
    Fail(err, "the runner template was started for " + std::to_string(argc) + " arguments, the runner has " +
                  std::to_string(args.size()));
  size_t bytes = 0;
  for (const auto& a : args) bytes += a.size() + 1;
  const size_t area = static_cast<size_t>(argv[argc - 1] + std::strlen(argv[argc - 1]) + 1 - argv[0]);
  char* block = bytes <= area ? argv[0] : static_cast<char*>(std::malloc(bytes));  // never freed
  if (block == argv[0]) std::memset(block, 0, area);
  for (int i = 0; i < argc; ++i) {
    std::memcpy(block, args[i].c_str(), args[i].size() + 1);
    argv[i] = block;
    block += args[i].size() + 1;
  }
}

// A new process's signals: none blocked, none handled.
void ResetSignals() {
  for (int s = 1; s < NSIG; ++s) signal(s, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

// The supervisor (a fork of the template, per handoff): it receives the handoff and launches the
// runner. Returns in the runner only, ready to go on into Node's main.
void Supervisor(int conn, int argc, char** argv) {
  // Not tied to the template's life: it ends as its runner or its hearth-jail does.
  Handoff h;
  std::string why;
  const timeval patience{10, 0};  // a peer that connects and sends nothing
  setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
  if (!ReceiveHandoff(conn, h, why)) Die(why);
  conn = Install(h, conn);
  std::vector<char*> args{const_cast<char*>("hearth-jail")};
  for (auto& a : h.args) args.push_back(a.data());
  const Options o = Parse(static_cast<int>(args.size()), args.data());
  RequireWalls(o);
  // The environment the handoff brought, for the runner (kept: it is Node's environ from now on).
  auto* env = new std::vector<char*>();
  for (auto& e : h.env) env->push_back(strdup(e.c_str()));
  env->push_back(nullptr);
  const Launched runner = Launch(o, conn);
  environ = env->data();
  ScratchEnv(runner.scratch);
  SetArgv(argc, argv, o.argv, runner.err);
  ResetSignals();
  // What an exec would close: the uid's lock (the supervisor holds it), the setup's pipes, whatever
  // took 3 or 4 where the handoff brought none.
  for (const int fd : {3, 4})
    if (std::find(h.numbers.begin(), h.numbers.end(), static_cast<uint32_t>(fd)) == h.numbers.end()) close(fd);
  close_range(5, ~0U, 0);
}

// The template's life: libraries loaded, then a fork per handoff. Returns in a runner only.
void Serve(const std::string& socketPath, const std::string& preload, int argc, char** argv) {
  const pid_t node = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != node) _exit(kSetupFailed);
  for (size_t at = 0; at < preload.size();) {
    const size_t colon = std::min(preload.find(':', at), preload.size());
    const std::string lib = preload.substr(at, colon - at);
    if (!lib.empty() && !dlopen(lib.c_str(), RTLD_NOW)) Die(std::string("the runner template: ") + dlerror());
    at = colon + 1;
  }
  // A fork keeps only the calling thread: a library that started one would be broken in a runner.
  if (const int n = Threads(); n != 1) Die("the runner template has " + std::to_string(n) + " threads: it cannot fork");
  const std::string jail = JailBeside();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socketPath.size() >= sizeof addr.sun_path) Die("the runner template's socket path is too long");
  std::memcpy(addr.sun_path, socketPath.c_str(), socketPath.size() + 1);
  const int listener = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  unlink(socketPath.c_str());
  const mode_t mask = umask(0177);
  const bool bound = listener >= 0 && bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  umask(mask);
  if (!bound || listen(listener, 64) != 0) Die(Errno("the runner template's socket " + socketPath));
  // Supervisors are reaped by the kernel; each resets this for its own runner.
  signal(SIGCHLD, SIG_IGN);
  if (write(STDOUT_FILENO, "ready\n", 6) != 6) _exit(kSetupFailed);
  for (;;) {
    const int conn = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      Die(Errno("the runner template: accept"));
    }
    if (FromNode(conn, node, jail) && fork() == 0) {
      signal(SIGCHLD, SIG_DFL);
      close(listener);
      Supervisor(conn, argc, argv);
      return;
    }
    close(conn);
  }
}

}  // namespace
}  // namespace jail

// Runs before Node's main; a no-op unless this process is the runner template.
__attribute__((constructor)) static void HearthTemplate(int argc, char** argv, char**) {
  const char* socketPath = std::getenv("HEARTH_TEMPLATE_SOCKET");
  if (!socketPath) return;
  const std::string path = socketPath;
  const char* preload = std::getenv("HEARTH_TEMPLATE_PRELOAD");
  const std::string libs = preload ? preload : "";
  unsetenv("HEARTH_TEMPLATE_SOCKET");
  unsetenv("HEARTH_TEMPLATE_PRELOAD");
  unsetenv("LD_PRELOAD");
  jail::Serve(path, libs, argc, argv);
}
