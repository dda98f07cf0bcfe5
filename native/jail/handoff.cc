// hearth-jail's handoff to the runner template: one SOCK_SEQPACKET message, so it arrives whole or
// not at all. Its bytes: the count of arguments, of environment entries and of descriptors (three
// uint32), the descriptors' numbers (uint32 each), then each string with its NUL; the descriptors
// themselves ride along as SCM_RIGHTS, in the same order.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "jail.h"

namespace jail {
namespace {

// Arguments and environment together; a runner's are a few KB (its --ro list).
constexpr size_t kMaxBytes = 192 << 10;
constexpr int kMaxFds = 5;

void Put(std::string& out, uint32_t n) { out.append(reinterpret_cast<const char*>(&n), sizeof n); }

// A message of `iov` with room for kMaxFds descriptors in `control`.
msghdr Message(iovec& iov, char* control, size_t controlBytes) {
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = controlBytes;
  return m;
}

bool Strings(const char*& at, const char* end, uint32_t count, std::vector<std::string>& into) {
  for (uint32_t i = 0; i < count; ++i) {
    const void* nul = std::memchr(at, '\0', static_cast<size_t>(end - at));
    if (!nul) return false;
    into.emplace_back(at);
    at = static_cast<const char*>(nul) + 1;
  }
  return true;
}

}  // namespace

bool SendHandoff(int sock, const Handoff& h, std::string& why) {
  std::string bytes;
  Put(bytes, static_cast<uint32_t>(h.args.size()));
  Put(bytes, static_cast<uint32_t>(h.env.size()));
  Put(bytes, static_cast<uint32_t>(h.fds.size()));
  for (const int fd : h.fds) Put(bytes, static_cast<uint32_t>(fd));
  for (const auto* list : {&h.args, &h.env})
    for (const auto& s : *list) bytes.append(s.c_str(), s.size() + 1);
  if (bytes.size() > kMaxBytes || h.fds.size() > kMaxFds) {
    why = "the handoff is too large (" + std::to_string(bytes.size()) + " bytes)";
    return false;
  }
  iovec iov{bytes.data(), bytes.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  msghdr m = Message(iov, control, CMSG_SPACE(sizeof(int) * h.fds.size()));
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * h.fds.size());
  std::memcpy(CMSG_DATA(c), h.fds.data(), sizeof(int) * h.fds.size());
  ssize_t sent;
  do sent = sendmsg(sock, &m, MSG_NOSIGNAL);
  while (sent < 0 && errno == EINTR);
  if (sent == static_cast<ssize_t>(bytes.size())) return true;
  why = Errno("the handoff to the runner template");
  return false;
}

bool ReceiveHandoff(int sock, Handoff& h, std::string& why) {
  std::vector<char> bytes(kMaxBytes + 1);
  iovec iov{bytes.data(), bytes.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  msghdr m = Message(iov, control, sizeof control);
  ssize_t n;
  do n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    h.fds.resize(count);
    std::memcpy(h.fds.data(), CMSG_DATA(c), count * sizeof(int));
  }
  uint32_t counts[3];
  if (n < static_cast<ssize_t>(sizeof counts) || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
    why = n < 0 ? Errno("the handoff") : "the handoff was cut short";
    return false;
  }
  std::memcpy(counts, bytes.data(), sizeof counts);
  const char* at = bytes.data() + sizeof counts;
  const char* end = bytes.data() + n;
  if (counts[2] != h.fds.size() || static_cast<size_t>(end - at) < counts[2] * sizeof(uint32_t)) {
    why = "the handoff's descriptors do not match their numbers";
    return false;
  }
  h.numbers.resize(counts[2]);
  std::memcpy(h.numbers.data(), at, counts[2] * sizeof(uint32_t));
  at += counts[2] * sizeof(uint32_t);
  for (size_t i = 0; i < h.numbers.size(); ++i) {
    if (h.numbers[i] >= kMaxFds || (i < 3 && h.numbers[i] != i)) {
      why = "the handoff's descriptors are not 0, 1, 2 and then 3 or 4";
      return false;
    }
  }
  if (!Strings(at, end, counts[0], h.args) || !Strings(at, end, counts[1], h.env) || at != end) {
    why = "the handoff's strings are malformed";
    return false;
  }
  return true;
}

}  // namespace jail
