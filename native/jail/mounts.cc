// The runner's own mount namespace, set up from inside it: a private /tmp, /dev/shm and /proc, and
// its own cgroups alone under /sys/fs/cgroup (SetUpMounts says what each holds).
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "jail.h"

namespace jail {
namespace {

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

// Under /sys/fs/cgroup, its own cgroups alone (read-only), each where its hierarchy is mounted, as a
// container sees its own: the host's tree — every runner's cgroup and what it uses — is covered by an
// empty tmpfs. A hierarchy mounted elsewhere stays out of sight (Landlock reads only /sys/fs/cgroup).
void HideCgroups(const Options& o, Report& r) {
  const std::string root = "/sys/fs/cgroup";
  struct stat st {};
  if (stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
  std::vector<std::pair<std::string, int>> own;
  for (size_t i = 0; i < o.cgroupMounts.size(); ++i) {
    const std::string& at = o.cgroupMounts[i];
    if (at != root && at.rfind(root + "/", 0) != 0) continue;
    const std::string& procs = o.cgroupProcs[i];
    const int fd = open(procs.substr(0, procs.rfind('/')).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) own.emplace_back(at, fd);
  }
  if (mount("tmpfs", root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=16k,mode=755") != 0) {
    r.notes.push_back(Errno("cgroup: covering the host's /sys/fs/cgroup was refused (the runners' cgroups stay in sight)"));
    for (const auto& [path, fd] : own) close(fd);
    return;
  }
  BindBack(own, false);
}

}  // namespace

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
  HideCgroups(o, r);
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

}  // namespace jail
