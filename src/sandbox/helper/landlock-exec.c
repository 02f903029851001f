/*
 * landlock-exec: confines itself with Landlock, a seccomp filter and no capabilities, then
 * execs a program. The bridge runs bash through it where bubblewrap is missing or cannot run
 * (src/sandbox/landlock.ts builds the arguments; docs/tools.md says what it guarantees).
 *
 *   landlock-exec [--parent-pid PID] [--print-abi] {--ro PATH | --rw PATH}... -- PROGRAM ARGS...
 *
 *   --ro PATH   read and execute below PATH (a file: read and execute it)
 *   --rw PATH   every file system right below PATH (a file: read, write, truncate it)
 *   --parent-pid PID  die with that process: SIGKILL when it dies (PR_SET_PDEATHSIG), and a
 *               refusal to start if it already has
 *   --print-abi writes "landlock-abi N" to stderr once confined (the bridge's probe reads it)
 *
 * Invariant: PROGRAM runs only fully confined. Every step that fails — no Landlock in the
 * kernel, a rule the kernel refuses, landlock_restrict_self, the seccomp filter, a capability
 * left in the bounding set of a root process — ends this process with status 125 and a line
 * "landlock-exec: ..." on stderr; nothing is ever exec'd unconfined. Rules come only from argv
 * (the bridge's), never from the environment, which the bridge passes through to PROGRAM.
 *
 * What each part holds:
 * - Landlock (ABI 1+): file system access only below the --ro/--rw paths; everything else is
 *   denied, reads included. A Landlock domain may not ptrace (nor read /proc/PID/environ or
 *   mem of) a process outside it. ABI 2 adds cross-folder rename/link (REFER) in --rw paths,
 *   ABI 3 truncate, ABI 5 device ioctls; ABI 6 scopes signals and abstract unix sockets to the
 *   domain (the bridge and other processes cannot be signalled). Rights an older kernel does
 *   not know are not asked for; the seccomp filter covers truncate(2) below ABI 3.
 * - seccomp: no mount, namespaces (unshare, setns, clone with CLONE_NEW*), ptrace,
 *   process_vm_*, keyrings, bpf, perf, kernel modules, kexec, reboot, swap, io_uring,
 *   TIOCSTI; setsid/setpgid are reported as done but do nothing, so every process stays in the
 *   bridge's process group and dies with it. A foreign architecture's syscalls kill the process.
 * - credentials: PR_SET_NO_NEW_PRIVS, no capability (effective, permitted, inheritable,
 *   ambient; the bounding set emptied and, for root, SECBIT_NOROOT locked); as root, also no
 *   chmod/chown/xattr changes (uid 0 owns the system's files, and Landlock does not govern
 *   file metadata).
 *
 * Built static (musl) by scripts/sandbox-helper.mjs with fixed flags, so the same source gives
 * the same bytes; the bridge checks its sha256 before every exec.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Landlock's ABI, defined here: libc headers lag behind the kernel's. */
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_EXECUTE (1ULL << 0)
#define LL_WRITE_FILE (1ULL << 1)
#define LL_READ_FILE (1ULL << 2)
#define LL_READ_DIR (1ULL << 3)
#define LL_REFER (1ULL << 13)
#define LL_TRUNCATE (1ULL << 14)
#define LL_IOCTL_DEV (1ULL << 15)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL (1ULL << 1)
struct ll_ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};
struct ll_path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

#if defined(__x86_64__)
#define THIS_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "landlock-exec supports x86_64 and aarch64"
#endif

#define FAIL_STATUS 125
#define MAX_RULES 256

static void fail(const char *what, int err) {
  if (err) fprintf(stderr, "landlock-exec: %s: %s\n", what, strerror(err));
  else fprintf(stderr, "landlock-exec: %s\n", what);
  _exit(FAIL_STATUS);
}

/* ---- seccomp ---------------------------------------------------------------------------- */

static struct sock_filter prog[512];
static unsigned short plen;
static void emit(struct sock_filter f) {
  if (plen >= sizeof prog / sizeof prog[0]) fail("seccomp program too long", 0);
  prog[plen++] = f;
}
#define STMT(code, k) emit((struct sock_filter)BPF_STMT(code, k))
#define JUMP(code, k, jt, jf) emit((struct sock_filter)BPF_JUMP(code, k, jt, jf))
#define RET_ERRNO(e) (SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))
#define LOAD_NR() STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
/* Low 32 bits of an argument (both architectures are little-endian). */
#define LOAD_ARG(i) STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args) + 8 * (i))

/* nr → ret: compares the loaded nr, and falls through when it differs. */
static void deny_nr(long nr, uint32_t ret) {
  JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1);
  STMT(BPF_RET | BPF_K, ret);
}

static const long denied[] = {
  __NR_mount, __NR_umount2, __NR_pivot_root, __NR_chroot, __NR_unshare, __NR_setns,
  __NR_ptrace, __NR_process_vm_readv, __NR_process_vm_writev, __NR_kexec_load,
  __NR_bpf, __NR_keyctl, __NR_add_key, __NR_request_key, __NR_perf_event_open,
  __NR_init_module, __NR_finit_module, __NR_delete_module, __NR_reboot, __NR_swapon,
  __NR_swapoff, __NR_open_by_handle_at, __NR_userfaultfd, __NR_acct, __NR_quotactl,
  __NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register,
  __NR_fsopen, __NR_fsconfig, __NR_fsmount, __NR_fspick, __NR_move_mount, __NR_open_tree,
  __NR_mount_setattr,
#ifdef __NR_kexec_file_load
  __NR_kexec_file_load,
#endif
#ifdef __NR_umount
  __NR_umount,
#endif
};
/* As root: file metadata, which uid 0 may change on the files it owns (all of the system's). */
static const long denied_as_root[] = {
  __NR_fchmod, __NR_fchmodat, __NR_fchown, __NR_fchownat, __NR_setxattr, __NR_lsetxattr,
  __NR_fsetxattr, __NR_removexattr, __NR_lremovexattr, __NR_fremovexattr,
#ifdef __NR_chmod
  __NR_chmod, __NR_chown, __NR_lchown,
#endif
#ifdef __NR_fchmodat2
  __NR_fchmodat2,
#else
  452,
#endif
};

#define CLONE_NAMESPACES 0x7e020000U /* NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET */
#define TIOCSTI_NR 0x5412
#define TIOCLINUX_NR 0x541C

static void install_seccomp(int abi, int root) {
  STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_AUDIT_ARCH, 1, 0);
  STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  LOAD_NR();
#if defined(__x86_64__)
  /* x32 syscalls share the arch value: refuse the whole x32 range. */
  JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U, 0, 1);
  STMT(BPF_RET | BPF_K, RET_ERRNO(EPERM));
#endif
  for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) deny_nr(denied[i], RET_ERRNO(EPERM));
  if (root)
    for (size_t i = 0; i < sizeof denied_as_root / sizeof denied_as_root[0]; i++) deny_nr(denied_as_root[i], RET_ERRNO(EPERM));
  /* Below ABI 3 Landlock does not see truncate(2) of a path. */
  if (abi < 3) deny_nr(__NR_truncate, RET_ERRNO(EPERM));
  /* Leaving the process group would outlive the bridge's kill of the group: pretend success. */
  deny_nr(__NR_setsid, RET_ERRNO(0));
  deny_nr(__NR_setpgid, RET_ERRNO(0));
  /* clone3's flags are in memory, out of the filter's sight: ENOSYS makes libc use clone. */
  deny_nr(__NR_clone3, RET_ERRNO(ENOSYS));
  /* clone: no new namespace. */
  JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4);
  LOAD_ARG(0);
  JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NAMESPACES, 0, 1);
  STMT(BPF_RET | BPF_K, RET_ERRNO(EPERM));
  STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  /* ioctl: no typing into a terminal. */
  JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 5);
  LOAD_ARG(1);
  JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI_NR, 1, 0);
  JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX_NR, 0, 1);
  STMT(BPF_RET | BPF_K, RET_ERRNO(EPERM));
  STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

  struct sock_fprog fprog = {.len = plen, .filter = prog};
  if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) fail("installing the seccomp filter", errno);
}

/* ---- capabilities ----------------------------------------------------------------------- */

#define SECBITS_LOCKED_NOROOT 0x2f /* NOROOT, NOROOT_LOCKED, NO_SETUID_FIXUP(_LOCKED), KEEP_CAPS_LOCKED */

static void drop_capabilities(int root) {
  if (root && prctl(PR_SET_SECUREBITS, SECBITS_LOCKED_NOROOT, 0, 0, 0) != 0) fail("as root, locking SECBIT_NOROOT (needs CAP_SETPCAP)", errno);
  for (int cap = 0; cap < 64; cap++) {
    int has = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
    if (has < 0) break; /* past the kernel's last capability */
    if (has == 1 && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && root) fail("as root, emptying the capability bounding set", errno);
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  if (syscall(__NR_capset, &hdr, data) != 0) fail("dropping the capabilities", errno);
  if (syscall(__NR_capget, &hdr, data) != 0) fail("reading the capabilities back", errno);
  for (int i = 0; i < 2; i++)
    if (data[i].effective || data[i].permitted || data[i].inheritable) fail("a capability is left after dropping them all", 0);
}

/* ---- Landlock ---------------------------------------------------------------------------- */

struct rule {
  const char *path;
  int rw;
};

static uint64_t handled_fs(int abi) {
  uint64_t all = (1ULL << 13) - 1; /* ABI 1: EXECUTE .. MAKE_SYM */
  if (abi >= 2) all |= LL_REFER;
  if (abi >= 3) all |= LL_TRUNCATE;
  if (abi >= 5) all |= LL_IOCTL_DEV;
  return all;
}

static void add_rule(int ruleset, const struct rule *r, uint64_t handled) {
  int fd = open(r->path, O_PATH | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return; /* gone since the bridge looked: nothing to allow */
    fail(r->path, errno);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) fail(r->path, errno);
  uint64_t want = r->rw ? handled : (LL_EXECUTE | LL_READ_FILE | LL_READ_DIR);
  if (!S_ISDIR(st.st_mode)) want &= LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | LL_TRUNCATE | LL_IOCTL_DEV;
  struct ll_path_beneath_attr attr = {.allowed_access = want & handled, .parent_fd = fd};
  if (syscall(__NR_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &attr, 0) != 0) {
    char what[4200];
    snprintf(what, sizeof what, "the kernel refused the Landlock rule for %s", r->path);
    fail(what, errno);
  }
  close(fd);
}

static void landlock(int abi, const struct rule *rules, int n) {
  struct ll_ruleset_attr attr = {.handled_access_fs = handled_fs(abi)};
  size_t size = sizeof attr.handled_access_fs;
  if (abi >= 4) size += sizeof attr.handled_access_net; /* left 0: the network is not restricted */
  if (abi >= 6) {
    attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
    size = sizeof attr;
  }
  int ruleset = (int)syscall(__NR_landlock_create_ruleset, &attr, size, 0);
  if (ruleset < 0) fail("creating the Landlock ruleset", errno);
  for (int i = 0; i < n; i++) add_rule(ruleset, &rules[i], attr.handled_access_fs);
  if (syscall(__NR_landlock_restrict_self, ruleset, 0) != 0) fail("landlock_restrict_self", errno);
  close(ruleset);
}

/* ---- main -------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  static struct rule rules[MAX_RULES];
  int n = 0, print_abi = 0, i = 1;
  long parent = -1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    } else if ((strcmp(a, "--ro") == 0 || strcmp(a, "--rw") == 0) && i + 1 < argc) {
      if (n == MAX_RULES) fail("too many rules", 0);
      if (argv[i + 1][0] != '/') fail("a rule's path must be absolute", 0);
      rules[n].path = argv[i + 1];
      rules[n].rw = a[3] == 'w';
      n++;
      i++;
    } else if (strcmp(a, "--parent-pid") == 0 && i + 1 < argc) {
      char *end;
      parent = strtol(argv[++i], &end, 10);
      if (*end || parent <= 0) fail("--parent-pid needs a process id", 0);
    } else if (strcmp(a, "--print-abi") == 0) {
      print_abi = 1;
    } else {
      fprintf(stderr, "landlock-exec: unknown argument %s\n", a);
      fail("usage: landlock-exec [--parent-pid PID] [--print-abi] {--ro PATH | --rw PATH}... -- PROGRAM ARGS...", 0);
    }
  }
  if (i >= argc) fail("no program to run (after --)", 0);

  if (parent > 0) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) fail("PR_SET_PDEATHSIG", errno);
    if (getppid() != parent) fail("the bridge that started this is gone", 0);
  }
  int abi = (int)syscall(__NR_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  if (abi < 1) {
    if (errno == EOPNOTSUPP) fail("Landlock is built into this kernel but disabled (add landlock to the lsm= boot parameter)", 0);
    fail("this kernel has no Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK)", errno);
  }
  int root = geteuid() == 0 || getuid() == 0;
  drop_capabilities(root);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("PR_SET_NO_NEW_PRIVS", errno);
  landlock(abi, rules, n);
  install_seccomp(abi, root);
  if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) fail("no_new_privs is not set", 0);
  if (print_abi) fprintf(stderr, "landlock-abi %d\n", abi);
  execv(argv[i], &argv[i]);
  fail(argv[i], errno);
  return FAIL_STATUS;
}
