/* An LD_PRELOAD shim that makes exactly one worker process of a run slow: every
 * pread/pwrite (aio --engine psync) that process makes waits DS_SHIM_SLOW_NS
 * nanoseconds first, as a slower disk would answer. The tests of how a run of
 * several workers is timed use it (tests/e2e/test_aio_e2e.cc: an epoch takes the
 * slowest worker's time; each worker's own GiB/s is its own bytes over its own time).
 *
 *   DS_SHIM_SLOW_CLAIM=path  the slow process is the first one that does I/O, other
 *                            than the process that started the run (it writes the
 *                            shard files while setting up), and creates `path`
 *                            (O_EXCL): one process wins, every other stays fast
 *   DS_SHIM_SLOW_ALL=1       instead: every process other than the one that started
 *                            the run is slow (tune's aio points each run their I/O in
 *                            children of their own: psync made slow at every point)
 *   DS_SHIM_SLOW_NS=N        the wait before each of its reads and writes
 *   DS_SHIM_SLOW_AIO=1       also the queued engines' I/O (aio --engine libaio and
 *                            io_uring, and load's reads): after each libaio io_submit
 *                            and each io_uring_submit, the slow process waits N for
 *                            every I/O that call submitted (tune's skip notes: a
 *                            point of every engine at least its I/Os x N long)
 *
 * The winner says so once on stderr ("slow_shim: pid P is the slow one"). Unset,
 * nothing changes. The test removes the claim file. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static const char* g_claim;   /* DS_SHIM_SLOW_CLAIM */
static long long g_ns;        /* DS_SHIM_SLOW_NS */
static pid_t g_starter;       /* the process the run started in */
static pid_t g_decided;       /* the process the answer below is for */
static int g_slow;            /* this process is the slow one */
static int g_all;             /* DS_SHIM_SLOW_ALL: every process but the starter */
static int g_aio;             /* DS_SHIM_SLOW_AIO: io_submit / io_uring_submit too */

__attribute__((constructor)) static void shim_init(void) {
  g_claim = getenv("DS_SHIM_SLOW_CLAIM");
  const char* ns = getenv("DS_SHIM_SLOW_NS");
  g_ns = ns && *ns ? strtoll(ns, NULL, 10) : 0;
  g_starter = getpid();
  const char* all = getenv("DS_SHIM_SLOW_ALL");
  g_all = all && *all == '1';
  const char* aio = getenv("DS_SHIM_SLOW_AIO");
  g_aio = aio && *aio == '1';
}

static int this_process_is_slow(void) {
  const pid_t me = getpid();
  if (g_all) return g_ns > 0 && me != g_starter;
  if (!g_claim || g_ns <= 0 || me == g_starter) return 0;
  if (__atomic_load_n(&g_decided, __ATOMIC_ACQUIRE) != me) {
    /* Threads of one process may race here: O_EXCL makes one of them create the
     * file; the others then see EEXIST and, for this process, the same answer. */
    static int lock;
    while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE)) {
    }
    if (g_decided != me) {
      const int fd = open(g_claim, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
      g_slow = fd >= 0;
      if (fd >= 0) {
        close(fd);
        char line[96];
        const int n = snprintf(line, sizeof line, "slow_shim: pid %d is the slow one\n", (int)me);
        if (n > 0) {
          ssize_t ignored = write(2, line, (size_t)n);
          (void)ignored;
        }
      }
      __atomic_store_n(&g_decided, me, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
  }
  return g_slow;
}

static void wait_ns(long long ns) {
  const int saved = errno;
  struct timespec t = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
  errno = saved;
}

static void maybe_wait(void) {
  if (this_process_is_slow()) wait_ns(g_ns);
}

/* After a queued engine's submission: N for each I/O it submitted (rc of them). */
static void maybe_wait_submitted(int rc) {
  if (g_aio && rc > 0 && this_process_is_slow()) wait_ns(g_ns * rc);
}

typedef ssize_t (*pread_fn)(int, void*, size_t, off_t);
typedef ssize_t (*pwrite_fn)(int, const void*, size_t, off_t);

#define DS_SLOW(ret, name, fn_t, buf_t)                               \
  ret name(int fd, buf_t buf, size_t n, off_t off) {                  \
    static fn_t real;                                                 \
    if (!real) real = (fn_t)dlsym(RTLD_NEXT, #name);                  \
    if (!real) {                                                      \
      errno = ENOSYS;                                                 \
      return -1;                                                      \
    }                                                                 \
    maybe_wait();                                                     \
    return real(fd, buf, n, off);                                     \
  }
DS_SLOW(ssize_t, pread, pread_fn, void*)
DS_SLOW(ssize_t, pread64, pread_fn, void*)
DS_SLOW(ssize_t, pwrite, pwrite_fn, const void*)
DS_SLOW(ssize_t, pwrite64, pwrite_fn, const void*)

/* The queued engines' submissions, declared without their headers (the pointers are
 * passed through untouched): libaio's io_submit (the version the program binds,
 * LIBAIO_0.1, as corrupt_shim.c finds it) and liburing's io_uring_submit. */
typedef int (*io_submit_fn)(void*, long, void**);
int io_submit(void* ctx, long nr, void** iocbs) {
  static io_submit_fn real;
  if (!real) {
    real = (io_submit_fn)dlvsym(RTLD_NEXT, "io_submit", "LIBAIO_0.1");
    if (!real) real = (io_submit_fn)dlsym(RTLD_NEXT, "io_submit");
    if (!real) return -ENOSYS;
  }
  const int rc = real(ctx, nr, iocbs);
  maybe_wait_submitted(rc);
  return rc;
}

typedef int (*uring_submit_fn)(void*);
int io_uring_submit(void* ring) {
  static uring_submit_fn real;
  if (!real) real = (uring_submit_fn)dlsym(RTLD_NEXT, "io_uring_submit");
  if (!real) return -ENOSYS;
  const int rc = real(ring);
  maybe_wait_submitted(rc);
  return rc;
}
