// ds-docker-seccomp: runs a command under a seccomp filter that refuses, with
// EPERM, what Docker's default profile (moby profiles/seccomp/default.json)
// refuses a container that lacks CAP_SYS_NICE: the NUMA policy calls
// (get_mempolicy, mbind, set_mempolicy, set_mempolicy_home_node) and the page
// migration calls, which the profile does not list at all (move_pages,
// migrate_pages). --no-io-uring also refuses io_uring_setup/enter/register, as
// newer Docker releases do. --only leaves Docker's calls out and refuses just what
// --no-io-uring and --refuse name (a profile that differs from Docker's in one
// call). Everything else is allowed. For tests and
// bench/gpu-check only: it is how the suite runs the tool "inside a container"
// on a machine that has no container engine.
//
//   ds-docker-seccomp [--only] [--no-io-uring] [--refuse NAME]... [--] CMD [ARGS...]
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int refuse(scmp_filter_ctx ctx, const char* name) {
  const int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return 0;  // not a system call on this architecture / libseccomp
  const int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
  if (rc != 0) {
    fprintf(stderr, "ds-docker-seccomp: seccomp_rule_add(%s): %s\n", name, strerror(-rc));
    return -1;
  }
  return 0;
}

int main(int argc, char** argv) {
  int i = 1, no_uring = 0, only = 0;
  for (; i < argc && argv[i][0] == '-'; ++i) {
    if (strcmp(argv[i], "--") == 0) {
      ++i;
      break;
    }
    if (strcmp(argv[i], "--no-io-uring") == 0) {
      no_uring = 1;
      continue;
    }
    if (strcmp(argv[i], "--only") == 0) {
      only = 1;
      continue;
    }
    if (strcmp(argv[i], "--refuse") == 0 && i + 1 < argc) {
      ++i;  // applied below, once the filter exists
      continue;
    }
    fprintf(stderr,
            "ds-docker-seccomp: unknown option '%s' (usage: ds-docker-seccomp [--only] [--no-io-uring] [--refuse NAME]... [--] "
            "CMD ARGS...)\n",
            argv[i]);
    return 2;
  }
  if (i >= argc) {
    fprintf(stderr, "usage: ds-docker-seccomp [--only] [--no-io-uring] [--refuse NAME]... [--] CMD ARGS...\n");
    return 2;
  }
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) {
    fprintf(stderr, "ds-docker-seccomp: seccomp_init failed\n");
    return 1;
  }
  static const char* const kNuma[] = {"get_mempolicy", "mbind",        "set_mempolicy", "set_mempolicy_home_node",
                                      "move_pages",    "migrate_pages"};
  static const char* const kUring[] = {"io_uring_setup", "io_uring_enter", "io_uring_register"};
  for (size_t k = 0; !only && k < sizeof kNuma / sizeof kNuma[0]; ++k)
    if (refuse(ctx, kNuma[k]) != 0) return 1;
  if (no_uring)
    for (size_t k = 0; k < sizeof kUring / sizeof kUring[0]; ++k)
      if (refuse(ctx, kUring[k]) != 0) return 1;
  for (int k = 1; k + 1 < i; ++k) {
    if (strcmp(argv[k], "--refuse") != 0) continue;
    const char* name = argv[++k];
    if (seccomp_syscall_resolve_name(name) == __NR_SCMP_ERROR) {
      fprintf(stderr, "ds-docker-seccomp: --refuse %s: no such system call here\n", name);
      return 2;
    }
    if (refuse(ctx, name) != 0) return 1;
  }
  const int rc = seccomp_load(ctx);  // sets no_new_privs first (libseccomp's default), so it works unprivileged
  seccomp_release(ctx);
  if (rc != 0) {
    fprintf(stderr, "ds-docker-seccomp: seccomp_load: %s\n", strerror(-rc));
    return 1;
  }
  execvp(argv[i], argv + i);
  fprintf(stderr, "ds-docker-seccomp: %s: %s\n", argv[i], strerror(errno));
  return 127;
}
