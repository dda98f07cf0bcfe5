// Who the runner is. A root node gives each runner a uid of its range that no other runner on the
// host holds (a lock file per uid); a node that is not root keeps its own uid outside and gives the
// runner one inside its user namespace (written in its uid and gid maps). Either way the runner ends
// with no capability at all.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

#include <cerrno>
#include <string>

#include "jail.h"

namespace jail {
namespace {

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

}  // namespace

Ids PickIds(const Options& o, bool root, Report& r) {
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
  return ids;
}

std::string MapIds(pid_t pid, const Ids& ids, bool root) {
  const std::string proc = "/proc/" + std::to_string(pid);
  if (!root && !WriteFile(proc + "/setgroups", "deny")) return Errno("setgroups deny");
  if (!WriteFile(proc + "/uid_map", std::to_string(ids.insideUid) + " " + std::to_string(ids.hostUid) + " 1\n"))
    return Errno("uid_map");
  if (!WriteFile(proc + "/gid_map", std::to_string(ids.insideGid) + " " + std::to_string(ids.hostGid) + " 1\n"))
    return Errno("gid_map");
  return "";
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

}  // namespace jail
