// The jail's report to the node: which layers it applied and why any is missing, as the first frame
// on the runner's channel, written before the program runs (runtime/runner/walls/jail.ts reads it as
// a JailReport). JSON by hand: the jail links nothing but the C library.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "jail.h"

namespace jail {
namespace {

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

std::string ReportJson(const Report& r) {
  std::string notes = "[";
  for (size_t i = 0; i < r.notes.size(); ++i) notes += (i ? "," : "") + JsonString(r.notes[i]);
  notes += "]";
  return std::string("{\"t\":\"jail\",\"pid\":") + std::to_string(r.pid) + ",\"uid\":" + std::to_string(r.uid) +
         ",\"layers\":{\"namespaces\":" + JsonString(r.namespaces) + ",\"privateProc\":" +
         (r.privateProc ? "true" : "false") + ",\"uid\":" + (r.ownUid ? "true" : "false") +
         ",\"landlock\":" + std::to_string(r.landlockAbi) + ",\"seccomp\":" + (r.seccomp ? "true" : "false") +
         ",\"cgroup\":" + (r.cgroup ? "true" : "false") + ",\"oomScoreAdj\":" + std::to_string(r.oomScoreAdj) +
         "},\"notes\":" + notes + "}";
}

}  // namespace

// The report, as a frame of the node's channel (runtime/runner/wire/channel.ts): u32 length, u32
// header length, the JSON header, zeros to a 64-byte boundary.
void SendReport(int fd, const Report& r) {
  const std::string json = ReportJson(r);
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

}  // namespace jail
