// hearth-jail [options] -- PROGRAM [ARGS...]: see jail.h. Two processes: this one stays outside
// (it holds the uid's lock, mirrors the runner's exit status to the node and dies with the node),
// and its child, made in new namespaces, sets up its mounts, drops to its uid, restricts itself
// with Landlock and seccomp, reports, and execs PROGRAM as pid 1 of its own pid namespace.
//
// Here, the order of it; each step is a file of its own (jail.h lists them).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "jail.h"

namespace jail {
namespace {

int Run(int argc, char** argv) {
  const pid_t node = getppid();
  // With the node: a runner never outlives it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != node) return kSetupFailed;
  const Options o = Parse(argc, argv);
  const bool root = geteuid() == 0;
  Report r;
  const Ids ids = PickIds(o, root, r);
  int go[2], err[2];
  if (pipe2(go, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) Die(Errno("pipe"));
  const Started child = StartChild(o, root, r);
  if (child.pid == 0) {
    close(go[1]);
    close(err[0]);
    Child(o, r, ids, child.ns, child.userns, go[0], err[1]);
  }
  Supervise(o, ids, child, root, go, err);
}

}  // namespace
}  // namespace jail

int main(int argc, char** argv) { return jail::Run(argc, argv); }
