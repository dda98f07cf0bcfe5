// The runner's side of hearth-jail: once its parent has written its id maps and cgroups, it takes
// its uid, makes its mounts, gives up every capability, restricts itself with Landlock and seccomp,
// and reports what it applied; then it execs the program (pid 1 of its own pid namespace, where it
// has one), or, forked from the runner template, goes on as it (template.cc).
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "jail.h"

namespace jail {

[[noreturn]] void Fail(int err, const std::string& why) {
  const std::string m = why + "\n";
  if (write(err, m.data(), m.size()) < 0) _exit(kSetupFailed);
  _exit(kSetupFailed);
}

void ScratchEnv(const std::string& scratch) {
  if (scratch.empty()) return;
  // Caches a library keeps in $HOME (CUDA's compute cache, ~/.cache) go to its scratch: its home
  // is read-only to it.
  setenv("TMPDIR", scratch.c_str(), 1);
  setenv("XDG_CACHE_HOME", (scratch + "/.cache").c_str(), 0);
  setenv("CUDA_CACHE_PATH", (scratch + "/.nv").c_str(), 0);
}

namespace {

// The uid first, so what the mounts make is the runner's; its capabilities are kept (in its own
// user namespace only, where it has one) for those mounts, then all dropped.
void TakeUid(const Ids& ids, int err) {
  prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
  // Inside a user namespace whose gid map the parent wrote without setgroups, this fails, and
  // there are no supplementary groups to drop.
  setgroups(0, nullptr);
  if (setresgid(ids.insideGid, ids.insideGid, ids.insideGid) != 0) Fail(err, Errno("setresgid"));
  if (setresuid(ids.insideUid, ids.insideUid, ids.insideUid) != 0) Fail(err, Errno("setresuid"));
  SetCapabilities(true);
}

// None of root's powers reach the program (a non-root uid's exec would drop them anyway), nor may
// it regain any (the bounding set; a set-uid program is refused by no_new_privs besides).
void DropCapabilities() {
  for (int cap = 0; cap <= 63; ++cap) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  SetCapabilities(false);
  prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
}

// Landlock and seccomp, as asked; under --require, a layer missing is fatal.
void Restrict(const Options& o, const std::string& scratch, Report& r, int err) {
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
    Fail(err, "a layer of the sandbox is missing (HEARTH_SANDBOX=strict): " + all);
  }
}

// The OOM killer's choice: the runner before anything of the node's, set before the program runs
// (raising it needs no privilege; nothing the runner does later may lower it without CAP_SYS_RESOURCE).
void RaiseOomScore(const Options& o, Report& r) {
  if (o.oomScoreAdj == 0) return;
  if (WriteFile("/proc/self/oom_score_adj", std::to_string(o.oomScoreAdj)))
    r.oomScoreAdj = o.oomScoreAdj;
  else
    r.notes.push_back(Errno("oom_score_adj: /proc/self/oom_score_adj"));
}

}  // namespace

[[noreturn]] void Exec(const Options& o, const std::string& scratch, int err) {
  ScratchEnv(scratch);
  std::vector<char*> args;
  for (const auto& a : o.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  Fail(err, Errno("exec " + o.argv[0]));
}

std::string Child(const Options& o, Report r, const Ids& ids, bool ns, bool userns, int go, int err) {
  // Wait for the parent: it writes the uid maps and cgroup membership, then our pid as it sees it.
  pid_t hostPid = 0;
  if (read(go, &hostPid, sizeof hostPid) != static_cast<ssize_t>(sizeof hostPid)) _exit(kSetupFailed);
  close(go);
  r.pid = hostPid;
  r.cgroup = !o.cgroupProcs.empty();  // the parent joined them all, or died
  RaiseOomScore(o, r);
  if (r.ownUid || userns) TakeUid(ids, err);
  std::string scratch;
  if (ns) {
    // A cgroup namespace of its own again, now that it is in its cgroups: /proc/self/cgroup names
    // them `/` (the one made with its other namespaces was rooted at the node's cgroups).
    if (!o.cgroupProcs.empty() && unshare(CLONE_NEWCGROUP) != 0) r.notes.push_back(Errno("cgroup: a cgroup namespace"));
    SetUpMounts(o, r);
    scratch = "/tmp";
  }
  // Its working directory is its home, as its own mounts show it: the folder it was started in is
  // the host's, under the private /tmp (its `..` would be its siblings' folders, or the runner
  // template's), which a path resolved inside the new mounts no longer reaches.
  if (chdir(o.home.empty() ? "/" : o.home.c_str()) != 0) Fail(err, Errno("chdir " + o.home));
  DropCapabilities();
  // After the uid change (which clears it): die with the parent.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (!ns && !o.home.empty()) {
    scratch = o.home + "/tmp";
    if (mkdir(scratch.c_str(), 0700) != 0 && errno != EEXIST) Fail(err, Errno("scratch " + scratch));
  }
  Restrict(o, scratch, r, err);
  if (o.reportFd >= 0) SendReport(o.reportFd, r);
  return scratch;
}

}  // namespace jail
