// hearth-jail's arguments (runtime/runner/walls/jail.ts writes them): the layers, the uid range,
// the runner's home and scratch size, what it may read and write, and after `--` the program.
#include <cstdlib>
#include <cstring>
#include <string>

#include "jail.h"

namespace jail {
namespace {

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

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
    } else if (StartsWith(a, "--cgroup-mount=")) {
      o.cgroupMounts.push_back(value("--cgroup-mount="));
    } else if (StartsWith(a, "--oom-score-adj=")) {
      o.oomScoreAdj = std::atoi(value("--oom-score-adj=").c_str());
    } else if (StartsWith(a, "--report-fd=")) {
      o.reportFd = std::atoi(value("--report-fd=").c_str());
    } else {
      Die("unknown option " + a);
    }
  }
  for (; i < argc; ++i) o.argv.emplace_back(argv[i]);
  if (o.argv.empty() || o.argv[0].empty() || o.argv[0][0] != '/') Die("usage: hearth-jail [options] -- /absolute/program [args...]");
  if (!o.cgroupMounts.empty() && o.cgroupMounts.size() != o.cgroupProcs.size())
    Die("--cgroup-mount is given once per --cgroup-procs, in the same order");
  if (o.oomScoreAdj < -1000 || o.oomScoreAdj > 1000) Die("--oom-score-adj is -1000 to 1000");
  if (o.uid && o.uidCount == 0) Die("--uid needs --uid-range=FIRST:COUNT");
  return o;
}

}  // namespace jail
