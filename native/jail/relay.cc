// hearth-jail --template=SOCKET: the node's handle on a runner the template forks. It hands the
// template the rest of its arguments, its environment and its descriptors (the runner's stdio, its
// channel and its arena), then waits: it ends as the runner ends (the template's supervisor sends
// the wait status), and killed, its socket closes and the supervisor kills the runner.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "jail.h"

extern char** environ;

namespace jail {

[[noreturn]] void Relay(const std::string& socketPath, int argc, char** argv) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socketPath.size() >= sizeof addr.sun_path) Die("--template: the socket's path is too long");
  std::memcpy(addr.sun_path, socketPath.c_str(), socketPath.size() + 1);
  Handoff h;
  h.args.assign(argv, argv + argc);
  for (char** e = environ; *e; ++e) h.env.emplace_back(*e);
  // Checked before the socket is made, which could take the number.
  h.fds = {0, 1, 2};
  for (const int fd : {3, 4})
    if (fcntl(fd, F_GETFD) != -1) h.fds.push_back(fd);
  const int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (sock < 0 || connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    Die(Errno("the runner template at " + socketPath));
  std::string why;
  if (!SendHandoff(sock, h, why)) Die(why);
  // Its descriptors are the runner's now: the node reads their end as the runner's.
  for (const int fd : h.fds)
    if (fd != 2) close(fd);
  int status = 0;
  ssize_t n;
  do n = read(sock, &status, sizeof status);
  while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof status)) Die("the runner template's supervisor ended before its runner");
  Mirror(status);
}

}  // namespace jail
