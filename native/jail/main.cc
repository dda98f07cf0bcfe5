// hearth-jail [options] -- PROGRAM [ARGS...]: see jail.h. Two processes: this one stays outside
// (it holds the uid's lock, mirrors the runner's exit status to the node and dies with the node),
// and its child, made in new namespaces, sets up its mounts, drops to its uid, restricts itself
// with Landlock and seccomp, reports, and execs PROGRAM as pid 1 of its own pid namespace.
//
// hearth-jail --template=SOCKET [options] -- PROGRAM [ARGS...]: the same runner, forked from the
// runner template (template.cc) with PROGRAM's runtime already loaded, instead of exec'd.
//
// Here, the order of it; each step is a file of its own (jail.h lists them).
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <string>

#include "jail.h"

namespace jail {
namespace {

int Run(int argc, char** argv) {
  const pid_t node = getppid();
  // With the node: a runner never outlives it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != node) return kSetupFailed;
  // --template=SOCKET first: the runner template forks the runner (template.cc); this process
  // hands it the rest of its arguments, its environment and descriptors, and ends as the runner ends.
  const std::string first = argc > 1 ? argv[1] : "";
  if (first.rfind("--template=", 0) == 0) Relay(first.substr(11), argc - 2, argv + 2);
  const Options o = Parse(argc, argv);
  const Launched runner = Launch(o, -1);
  Exec(o, runner.scratch, runner.err);
}

}  // namespace
}  // namespace jail

int main(int argc, char** argv) { return jail::Run(argc, argv); }
