// seccomp-bpf: the system calls a runner never needs and an attacker would, refused with EPERM
// (ENOSYS where a library should take its fallback). The channel to the node is inherited, so the
// runner makes no socket of any family; it starts threads but no processes; it attaches to,
// reads or mounts nothing; and it reaches no kernel interface that has been an exploit's door
// (bpf, perf, userfaultfd, io_uring, keyrings). Everything else is allowed: a deny list, as
// Docker's default profile and Chromium's baseline are, because LibTorch, CUDA and V8 use a wide and
// changing set of calls. A system call of another architecture (x32, i386) kills the process.
//
// Plain BPF, no libseccomp: the build has no dependency to find (the GPU kit builds this with only
// the kernel's headers).
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "jail.h"

namespace jail {

namespace {

#if defined(__x86_64__)
constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
#error "hearth-jail knows the system calls of x86_64 and aarch64 only"
#endif

struct Denied {
  long nr;
  int error;
};

const std::vector<Denied>& DenyList() {
  static const std::vector<Denied> list = {
      // Sockets: the node's channel is inherited; nothing else is to be reached or served.
      {__NR_socket, EPERM}, {__NR_socketpair, EPERM},
      // Other processes: no tracing, no reading or writing their memory, no stealing their files.
      {__NR_ptrace, EPERM}, {__NR_process_vm_readv, EPERM}, {__NR_process_vm_writev, EPERM},
      {__NR_kcmp, EPERM}, {__NR_pidfd_getfd, EPERM},
#ifdef __NR_process_madvise
      {__NR_process_madvise, EPERM},
#endif
      // No processes: threads only (clone is checked for CLONE_THREAD below).
#ifdef __NR_fork
      {__NR_fork, EPERM},
#endif
#ifdef __NR_vfork
      {__NR_vfork, EPERM},
#endif
      // clone3 passes its flags in memory, out of BPF's reach: ENOSYS sends glibc to clone.
      {__NR_clone3, ENOSYS},
      // Namespaces, mounts and the root.
      {__NR_unshare, EPERM}, {__NR_setns, EPERM}, {__NR_mount, EPERM}, {__NR_umount2, EPERM},
      {__NR_pivot_root, EPERM}, {__NR_chroot, EPERM}, {__NR_open_tree, EPERM}, {__NR_move_mount, EPERM},
      {__NR_fsopen, EPERM}, {__NR_fsconfig, EPERM}, {__NR_fsmount, EPERM}, {__NR_fspick, EPERM},
#ifdef __NR_mount_setattr
      {__NR_mount_setattr, EPERM},
#endif
      {__NR_open_by_handle_at, EPERM}, {__NR_name_to_handle_at, EPERM},
      // Kernel interfaces a model never needs and exploits often do.
      {__NR_keyctl, EPERM}, {__NR_add_key, EPERM}, {__NR_request_key, EPERM}, {__NR_bpf, EPERM},
      {__NR_perf_event_open, EPERM}, {__NR_userfaultfd, EPERM}, {__NR_io_uring_setup, ENOSYS},
      {__NR_io_uring_enter, ENOSYS}, {__NR_io_uring_register, ENOSYS}, {__NR_fanotify_init, EPERM},
      {__NR_kexec_load, EPERM}, {__NR_kexec_file_load, EPERM}, {__NR_init_module, EPERM},
      {__NR_finit_module, EPERM}, {__NR_delete_module, EPERM}, {__NR_reboot, EPERM}, {__NR_swapon, EPERM},
      {__NR_swapoff, EPERM}, {__NR_acct, EPERM}, {__NR_quotactl, EPERM},
#ifdef __NR_iopl
      {__NR_iopl, EPERM}, {__NR_ioperm, EPERM},
#endif
  };
  return list;
}

}  // namespace

bool ApplySeccomp(std::string& why) {
  std::vector<sock_filter> f;
  const auto stmt = [&](uint16_t code, uint32_t k) { f.push_back(BPF_STMT(code, k)); };
  const auto jump = [&](uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) { f.push_back(BPF_JUMP(code, k, jt, jf)); };
  // Another architecture's calls have other numbers: kill.
  stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
  jump(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0);
  stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr));
#if defined(__x86_64__)
  // The x32 ABI: the same numbers with bit 30 set.
  jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1);
  stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
#endif
  for (const auto& d : DenyList()) {
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(d.nr), 0, 1);
    stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | static_cast<uint32_t>(d.error));
  }
  // clone: a thread (CLONE_THREAD in the flags' low word) is allowed, a process is not.
  jump(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4);
  stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0]));
  jump(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1);
  stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
  stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

  sock_fprog prog{static_cast<unsigned short>(f.size()), f.data()};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    why = std::string("seccomp: no_new_privs: ") + std::strerror(errno);
    return false;
  }
  // TSYNC: every thread, should there be any (there are none yet: this runs before exec).
  if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0) {
    why = std::string("seccomp: ") + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace jail
