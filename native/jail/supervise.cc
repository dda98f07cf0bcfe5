// The process of hearth-jail that stays outside: it starts the runner's process in new namespaces
// (or, where the kernel refuses them, a plain child), writes its id maps and cgroup membership,
// releases it, says its setup failure if it had one, and ends as it ends — the same exit code or
// signal, so the node reads the runner's end as it was. It holds the uid's lock meanwhile, and passes
// the node's SIGTERM, SIGINT and SIGHUP on as SIGKILL. Forked from the runner template
// (template.cc), it sends the runner's end to hearth-jail on the relay instead, and kills the runner
// should hearth-jail go first.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "jail.h"

namespace jail {
namespace {

constexpr unsigned long kNamespaces =
    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;

volatile sig_atomic_t childPid = 0;

void KillChild(int) {
  if (childPid > 0) kill(childPid, SIGKILL);
}

// Writes the child's id maps and cgroup membership, then its pid as the node sees it: the child
// goes on. A failure kills it.
void Release(const Options& o, const Ids& ids, pid_t pid, bool root, bool userns, int go) {
  std::string failure;
  if (userns) failure = MapIds(pid, ids, root);
  for (const auto& procs : o.cgroupProcs) {
    if (!failure.empty()) break;
    if (!WriteFile(procs, std::to_string(pid))) failure = Errno("cgroup " + procs);
  }
  if (!failure.empty()) {
    kill(pid, SIGKILL);
    Die(failure);
  }
  if (write(go, &pid, sizeof pid) != static_cast<ssize_t>(sizeof pid)) Die(Errno("start"));
  close(go);
}

// The child's setup failure, if any (the pipe closes unread at its exec), said on stderr.
void SayChildFailure(int err) {
  std::string message;
  char buf[512];
  for (;;) {
    const ssize_t n = read(err, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    message.append(buf, static_cast<size_t>(n));
  }
  close(err);
  if (!message.empty()) std::fprintf(stderr, "hearth-jail: %s", message.c_str());
}

// The runner's wait status, once it ends; on a relay, a relay that closes first (hearth-jail was
// killed) kills the runner, and this process ends with it.
int WaitRunner(pid_t pid, int relay) {
  int status = 0;
  if (relay < 0) {
    while (waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) Die(Errno("wait"));
    }
    return status;
  }
  sigset_t chld, open;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &open);
  sigdelset(&open, SIGCHLD);
  struct sigaction sa {};
  sa.sa_handler = [](int) {};
  sigaction(SIGCHLD, &sa, nullptr);
  for (;;) {
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    pollfd p{relay, POLLIN, 0};
    if (ppoll(&p, 1, nullptr, &open) > 0) {
      kill(pid, SIGKILL);
      _exit(0);
    }
  }
}

}  // namespace

[[noreturn]] void Mirror(int status) {
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  const int sig = WTERMSIG(status);
  // Dies of the same signal, so the node reads the runner's end as it was (SIGSEGV, SIGKILL…).
  rlimit none{0, 0};
  setrlimit(RLIMIT_CORE, &none);
  signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
  kill(getpid(), sig);
  _exit(128 + sig);
}

Started StartChild(const Options& o, bool root, Report& r) {
  Started s;
  if (o.namespaces) {
    s.pid = syscall(SYS_clone, SIGCHLD | kNamespaces, nullptr, nullptr, nullptr, nullptr);
    if (s.pid >= 0) {
      s.ns = s.userns = true;
    } else {
      const std::string why = Errno("namespaces: a user namespace was refused");
      // Root may make the others without one.
      if (root) s.pid = syscall(SYS_clone, SIGCHLD | (kNamespaces & ~CLONE_NEWUSER), nullptr, nullptr, nullptr, nullptr);
      if (s.pid >= 0) {
        s.ns = true;
      } else {
        r.notes.push_back(why);
      }
    }
  }
  if (s.pid < 0) s.pid = fork();
  if (s.pid < 0) Die(Errno("fork"));
  if (s.ns) r.namespaces = s.userns ? "user,mount,pid,net,ipc,uts,cgroup" : "mount,pid,net,ipc,uts,cgroup";
  if (o.uid && !root && s.userns) r.ownUid = true;  // its own uid inside; the node's outside
  if (o.uid && !r.ownUid) r.notes.push_back("uid: the node is not root and has no user namespace: runners run as its uid");
  return s;
}

[[noreturn]] void Supervise(const Options& o, const Ids& ids, const Started& child, bool root, const int go[2],
                            const int err[2], int relay) {
  const pid_t pid = static_cast<pid_t>(child.pid);
  childPid = pid;
  close(go[0]);
  close(err[1]);
  if (o.reportFd >= 0) close(o.reportFd);
  struct sigaction sa {};
  sa.sa_handler = KillChild;
  for (const int s : {SIGTERM, SIGINT, SIGHUP}) sigaction(s, &sa, nullptr);
  Release(o, ids, pid, root, child.userns, go[1]);
  SayChildFailure(err[0]);
  const int status = WaitRunner(pid, relay);
  if (relay < 0) Mirror(status);
  if (write(relay, &status, sizeof status) < 0) _exit(kSetupFailed);
  _exit(0);
}

Launched Launch(const Options& o, int relay) {
  const bool root = geteuid() == 0;
  Report r;
  const Ids ids = PickIds(o, root, r);
  int go[2], err[2];
  if (pipe2(go, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) Die(Errno("pipe"));
  const Started child = StartChild(o, root, r);
  if (child.pid != 0) Supervise(o, ids, child, root, go, err, relay);
  close(go[1]);
  close(err[0]);
  if (relay >= 0) close(relay);
  return {Child(o, r, ids, child.ns, child.userns, go[0], err[1]), err[1]};
}

}  // namespace jail
