// hearth-jail [options] -- PROGRAM [ARGS...]: see jail.h. Two processes: this one stays outside
// (it holds the uid's lock, mirrors the runner's exit status to the node and dies with the node),
// and its child, made in new namespaces, sets up its mounts, drops to its uid, restricts itself
// with Landlock and seccomp, reports, and execs PROGRAM as pid 1 of its own pid namespace.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <grp.h>
#include <linux/capability.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "jail.h"

namespace jail {
namespace {

constexpr int kSetupFailed = 125;  // the jail could not be set up as asked
constexpr unsigned long kNamespaces =
    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;

volatile sig_atomic_t childPid = 0;

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "hearth-jail: %s\n", message.c_str());
  std::fflush(stderr);
  _exit(kSetupFailed);
}

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

Options Parse(int argc, char** argv) {
  Options o;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&](const char* name) -> std::string { return a.substr(std::strlen(name)); };
    if (a == "--") {
      ++i;
      break;
    } else if (a == "--namespaces") {
      o.namespaces = true;
    } else if (a == "--uid") {
      o.uid = true;
    } else if (a == "--landlock") {
      o.landlock = true;
    } else if (a == "--seccomp") {
      o.seccomp = true;
    } else if (a == "--require") {
      o.require = true;
    } else if (StartsWith(a, "--uid-range=")) {
      const std::string v = value("--uid-range=");
      const auto colon = v.find(':');
      if (colon == std::string::npos) Die("--uid-range=FIRST:COUNT");
      o.uidFirst = static_cast<uid_t>(std::strtoul(v.substr(0, colon).c_str(), nullptr, 10));
      o.uidCount = static_cast<uint32_t>(std::strtoul(v.substr(colon + 1).c_str(), nullptr, 10));
    } else if (StartsWith(a, "--uid-hint=")) {
      o.uidHint = static_cast<uint32_t>(std::strtoul(value("--uid-hint=").c_str(), nullptr, 10));
    } else if (StartsWith(a, "--gid=")) {
      o.gid = static_cast<gid_t>(std::strtoul(value("--gid=").c_str(), nullptr, 10));
    } else if (StartsWith(a, "--lock-dir=")) {
      o.lockDir = value("--lock-dir=");
    } else if (StartsWith(a, "--home=")) {
      o.home = value("--home=");
    } else if (StartsWith(a, "--tmp-size=")) {
      o.tmpBytes = std::strtoull(value("--tmp-size=").c_str(), nullptr, 10);
    } else if (StartsWith(a, "--ro=")) {
      o.readOnly.push_back(value("--ro="));
    } else if (StartsWith(a, "--rw=")) {
      o.readWrite.push_back(value("--rw="));
    } else if (StartsWith(a, "--dev=")) {
      o.devices.push_back(value("--dev="));
    } else if (StartsWith(a, "--cgroup-procs=")) {
      o.cgroupProcs.push_back(value("--cgroup-procs="));
    } else if (StartsWith(a, "--report-fd=")) {
      o.reportFd = std::atoi(value("--report-fd=").c_str());
    } else {
      Die("unknown option " + a);
    }
  }
  for (; i < argc; ++i) o.argv.emplace_back(argv[i]);
  if (o.argv.empty() || o.argv[0].empty() || o.argv[0][0] != '/') Die("usage: hearth-jail [options] -- /absolute/program [args...]");
  if (o.uid && o.uidCount == 0) Die("--uid needs --uid-range=FIRST:COUNT");
  return o;
}

bool WriteFile(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// A free uid of the range, locked for as long as this process lives (the lock file's descriptor is
// never closed: it goes with the process). Two nodes on one host take different uids.
uid_t LockUid(const Options& o) {
  if (o.lockDir.empty()) Die("--uid needs --lock-dir");
  if (mkdir(o.lockDir.c_str(), 0700) != 0 && errno != EEXIST) Die(Errno("uid locks: " + o.lockDir));
  struct stat st {};
  if (lstat(o.lockDir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
    Die("uid locks: " + o.lockDir + " must be a folder of this user's that no one else may write");
  }
  for (uint32_t i = 0; i < o.uidCount; ++i) {
    const uid_t uid = o.uidFirst + (o.uidHint + i) % o.uidCount;
    const std::string path = o.lockDir + "/" + std::to_string(uid);
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) Die(Errno("uid locks: " + path));
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return uid;
    close(fd);
  }
  Die("uid locks: every uid of the range is taken");
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// The report, as a frame of the node's channel (runtime/runner/channel.ts): u32 length, u32 header
// length, the JSON header, zeros to a 64-byte boundary.
void SendReport(int fd, const Report& r) {
  std::string notes = "[";
  for (size_t i = 0; i < r.notes.size(); ++i) notes += (i ? "," : "") + JsonString(r.notes[i]);
  notes += "]";
  const std::string json = std::string("{\"t\":\"jail\",\"pid\":") + std::to_string(r.pid) + ",\"uid\":" + std::to_string(r.uid) +
                           ",\"layers\":{\"namespaces\":" + JsonString(r.namespaces) + ",\"privateProc\":" +
                           (r.privateProc ? "true" : "false") + ",\"uid\":" + (r.ownUid ? "true" : "false") +
                           ",\"landlock\":" + std::to_string(r.landlockAbi) + ",\"seccomp\":" + (r.seccomp ? "true" : "false") +
                           ",\"cgroup\":" + (r.cgroup ? "true" : "false") + "},\"notes\":" + notes + "}";
  const size_t total = (8 + json.size() + 63) & ~static_cast<size_t>(63);
  std::string frame(total, '\0');
  const auto put32 = [&](size_t at, uint32_t v) {
    for (int b = 0; b < 4; ++b) frame[at + b] = static_cast<char>((v >> (8 * b)) & 0xff);
  };
  put32(0, static_cast<uint32_t>(total - 4));
  put32(4, static_cast<uint32_t>(json.size()));
  frame.replace(8, json.size(), json);
  size_t at = 0;
  while (at < frame.size()) {
    const ssize_t n = write(fd, frame.data() + at, frame.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) Die(Errno("report"));
    at += static_cast<size_t>(n);
  }
}

void MakeDirs(const std::string& path) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at == path.size() || path[at] == '/') mkdir(path.substr(0, at).c_str(), 0755);
  }
}

// The paths under `dir` among `paths`, each opened (O_PATH) before a new mount hides them.
std::vector<std::pair<std::string, int>> Beneath(const std::string& dir, const std::vector<std::string>& paths) {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& p : paths) {
    if (p.rfind(dir + "/", 0) != 0) continue;
    const int fd = open(p.c_str(), O_PATH | O_CLOEXEC);
    if (fd >= 0) out.emplace_back(p, fd);
  }
  return out;
}

// Binds each opened path back at its own path inside the new mount (read-only unless `writable`).
void BindBack(const std::vector<std::pair<std::string, int>>& opened, bool writable) {
  for (const auto& [path, fd] : opened) {
    struct stat st {};
    fstat(fd, &st);
    const auto slash = path.rfind('/');
    MakeDirs(path.substr(0, slash));
    if (S_ISDIR(st.st_mode)) {
      mkdir(path.c_str(), 0755);
    } else {
      const int made = open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
      if (made >= 0) close(made);
    }
    const std::string from = "/proc/self/fd/" + std::to_string(fd);
    if (mount(from.c_str(), path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) Die(Errno("mount: binding " + path));
    if (!writable && mount(nullptr, path.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0)
      Die(Errno("mount: making " + path + " read-only"));
    close(fd);
  }
}

// In the child, inside its new namespaces (with all capabilities there, none outside): its own
// /tmp and /dev/shm (tmpfs, size-limited, gone with it), its own /proc, its own host name. What it
// is to read or write under /tmp or /dev/shm (its home, a runtime kept in /tmp) is bound back in.
void SetUpMounts(const Options& o, Report& r) {
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) Die(Errno("mount: making / private"));
  std::vector<std::string> readable = o.readOnly;
  readable.insert(readable.end(), o.devices.begin(), o.devices.end());
  const std::vector<std::string> home = o.home.empty() ? std::vector<std::string>{} : std::vector<std::string>{o.home};
  const std::string size = "size=" + std::to_string(o.tmpBytes) + ",mode=1777";
  for (const char* dir : {"/tmp", "/dev/shm"}) {
    struct stat st {};
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    const auto ro = Beneath(dir, readable);
    const auto rw = Beneath(dir, o.readWrite);
    const auto own = Beneath(dir, home);
    if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, size.c_str()) != 0) Die(Errno(std::string("mount: a private ") + dir));
    BindBack(ro, false);
    BindBack(rw, true);
    // Its home: read-only for it is Landlock's to say (the node links its artifacts in there).
    BindBack(own, true);
  }
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0) {
    r.privateProc = true;
  } else {
    // A container whose /proc has masked paths refuses a new procfs; the host's stays, which
    // Landlock narrows to the runner's own entry.
    r.notes.push_back(Errno("namespaces: a private /proc was refused (the host's stays, narrowed by Landlock)"));
  }
  const char name[] = "hearth-runner";
  sethostname(name, sizeof name - 1);
}

// Effective capabilities: all those permitted (true), or none at all (false).
void SetCapabilities(bool effective) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (effective) {
    if (syscall(SYS_capget, &header, data) != 0) return;
    for (auto& d : data) d.effective = d.permitted;
  }
  syscall(SYS_capset, &header, data);
}

struct Ids {
  uid_t hostUid;
  gid_t hostGid;
  uid_t insideUid;
  gid_t insideGid;
};

[[noreturn]] void Child(const Options& o, Report r, const Ids& ids, bool ns, bool userns, int go, int err) {
  // Wait for the parent: it writes the uid maps and cgroup membership, then our pid as it sees it.
  pid_t hostPid = 0;
  if (read(go, &hostPid, sizeof hostPid) != static_cast<ssize_t>(sizeof hostPid)) _exit(kSetupFailed);
  close(go);
  r.pid = hostPid;
  r.cgroup = !o.cgroupProcs.empty();  // the parent joined them all, or died
  const auto fail = [&](const std::string& why) {
    const std::string m = why + "\n";
    if (write(err, m.data(), m.size()) < 0) _exit(kSetupFailed);
    _exit(kSetupFailed);
  };
  if (r.ownUid || userns) {
    // The uid first, so what the mounts make is the runner's; its capabilities are kept (in its own
    // user namespace only, where it has one) for those mounts, then all dropped.
    prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
    // Inside a user namespace whose gid map the parent wrote without setgroups, this fails, and
    // there are no supplementary groups to drop.
    setgroups(0, nullptr);
    if (setresgid(ids.insideGid, ids.insideGid, ids.insideGid) != 0) fail(Errno("setresgid"));
    if (setresuid(ids.insideUid, ids.insideUid, ids.insideUid) != 0) fail(Errno("setresuid"));
    SetCapabilities(true);
  }
  std::string scratch;
  if (ns) {
    SetUpMounts(o, r);
    scratch = "/tmp";
  }
  // None of root's powers reach the program (a non-root uid's exec would drop them anyway), nor may
  // it regain any (the bounding set; a set-uid program is refused by no_new_privs besides).
  for (int cap = 0; cap <= 63; ++cap) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  SetCapabilities(false);
  prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
  // After the uid change (which clears it): die with the parent.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (!ns && !o.home.empty()) {
    scratch = o.home + "/tmp";
    if (mkdir(scratch.c_str(), 0700) != 0 && errno != EEXIST) fail(Errno("scratch " + scratch));
  }
  // Landlock and seccomp both need it; so does a program that must never gain privileges.
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  std::string why;
  if (o.landlock) {
    r.landlockAbi = ApplyLandlock(o, scratch, why);
    if (r.landlockAbi == 0) r.notes.push_back(why);
  }
  if (o.seccomp) {
    r.seccomp = ApplySeccomp(why);
    if (!r.seccomp) r.notes.push_back(why);
  }
  if (o.require && !r.notes.empty()) {
    std::string all;
    for (const auto& n : r.notes) all += (all.empty() ? "" : "; ") + n;
    fail("a layer of the sandbox is missing (HEARTH_SANDBOX=strict): " + all);
  }
  if (o.reportFd >= 0) SendReport(o.reportFd, r);
  if (!scratch.empty()) {
    // Caches a library keeps in $HOME (CUDA's compute cache, ~/.cache) go to its scratch: its home
    // is read-only to it.
    setenv("TMPDIR", scratch.c_str(), 1);
    setenv("XDG_CACHE_HOME", (scratch + "/.cache").c_str(), 0);
    setenv("CUDA_CACHE_PATH", (scratch + "/.nv").c_str(), 0);
  }
  std::vector<char*> args;
  for (const auto& a : o.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  fail(Errno("exec " + o.argv[0]));
  _exit(kSetupFailed);
}

void KillChild(int) {
  if (childPid > 0) kill(childPid, SIGKILL);
}

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

int Run(int argc, char** argv) {
  const pid_t node = getppid();
  // With the node: a runner never outlives it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != node) return kSetupFailed;
  const Options o = Parse(argc, argv);
  const bool root = geteuid() == 0;
  Report r;
  Ids ids{getuid(), getgid(), getuid(), getgid()};
  if (o.uid) {
    if (root) {
      ids.hostUid = ids.insideUid = LockUid(o);
      ids.hostGid = ids.insideGid = o.gid;
      r.ownUid = true;
    } else {
      ids.insideUid = o.uidFirst + o.uidHint % o.uidCount;
      ids.insideGid = o.gid;
    }
  }
  r.uid = ids.hostUid;
  if (!o.home.empty() && r.ownUid && chown(o.home.c_str(), ids.hostUid, ids.hostGid) != 0) Die(Errno("chown " + o.home));

  int go[2], err[2];
  if (pipe2(go, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) Die(Errno("pipe"));
  bool ns = false, userns = false;
  long pid = -1;
  if (o.namespaces) {
    pid = syscall(SYS_clone, SIGCHLD | kNamespaces, nullptr, nullptr, nullptr, nullptr);
    if (pid >= 0) {
      ns = userns = true;
    } else {
      const std::string why = Errno("namespaces: a user namespace was refused");
      // Root may make the others without one.
      if (root) pid = syscall(SYS_clone, SIGCHLD | (kNamespaces & ~CLONE_NEWUSER), nullptr, nullptr, nullptr, nullptr);
      if (pid >= 0) {
        ns = true;
      } else {
        r.notes.push_back(why);
      }
    }
  }
  if (pid < 0) pid = fork();
  if (pid < 0) Die(Errno("fork"));
  if (ns) r.namespaces = userns ? "user,mount,pid,net,ipc,uts,cgroup" : "mount,pid,net,ipc,uts,cgroup";
  if (o.uid && !root && userns) r.ownUid = true;  // its own uid inside; the node's outside
  if (o.uid && !r.ownUid) r.notes.push_back("uid: the node is not root and has no user namespace: runners run as its uid");
  if (pid == 0) {
    close(go[1]);
    close(err[0]);
    Child(o, r, ids, ns, userns, go[0], err[1]);
  }
  childPid = static_cast<pid_t>(pid);
  close(go[0]);
  close(err[1]);
  if (o.reportFd >= 0) close(o.reportFd);
  struct sigaction sa {};
  sa.sa_handler = KillChild;
  for (const int s : {SIGTERM, SIGINT, SIGHUP}) sigaction(s, &sa, nullptr);

  std::string failure;
  if (userns) {
    const std::string proc = "/proc/" + std::to_string(pid);
    if (!root && !WriteFile(proc + "/setgroups", "deny")) failure = Errno("setgroups deny");
    if (failure.empty() && !WriteFile(proc + "/uid_map", std::to_string(ids.insideUid) + " " + std::to_string(ids.hostUid) + " 1\n"))
      failure = Errno("uid_map");
    if (failure.empty() && !WriteFile(proc + "/gid_map", std::to_string(ids.insideGid) + " " + std::to_string(ids.hostGid) + " 1\n"))
      failure = Errno("gid_map");
  }
  for (const auto& procs : o.cgroupProcs) {
    if (!failure.empty()) break;
    if (!WriteFile(procs, std::to_string(pid))) failure = Errno("cgroup " + procs);
  }
  if (!failure.empty()) {
    kill(static_cast<pid_t>(pid), SIGKILL);
    Die(failure);
  }
  const pid_t hostPid = static_cast<pid_t>(pid);
  if (write(go[1], &hostPid, sizeof hostPid) != static_cast<ssize_t>(sizeof hostPid)) Die(Errno("start"));
  close(go[1]);
  // The child's setup failure, if any (the pipe closes unread at its exec).
  std::string message;
  char buf[512];
  for (;;) {
    const ssize_t n = read(err[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    message.append(buf, static_cast<size_t>(n));
  }
  close(err[0]);
  if (!message.empty()) std::fprintf(stderr, "hearth-jail: %s", message.c_str());
  int status = 0;
  while (waitpid(static_cast<pid_t>(pid), &status, 0) < 0) {
    if (errno != EINTR) Die(Errno("wait"));
  }
  Mirror(status);
}

}  // namespace
}  // namespace jail

int main(int argc, char** argv) { return jail::Run(argc, argv); }
