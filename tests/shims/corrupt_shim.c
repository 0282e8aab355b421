/* An LD_PRELOAD shim for the validation tests: it makes exactly one copy, one read
 * or one write in a dev-sandbox process deliver wrong bytes (or fail), so a test can
 * show which --validate catches it, or what a failure says
 * (tests/e2e/test_validate_each.cc, test_aio_e2e.cc, test_offload_e2e.cc).
 *
 * The sim backend's copies are memcpy calls with run-time sizes in the binary, so
 * they go through the PLT and this memcpy replaces libc's; libaio completions come
 * back through io_getevents, which this file wraps. Counters are per process (a
 * forked child starts from its parent's count), atomic across threads.
 *
 *   DS_SHIM_MEMCPY_SIZE=S   only memcpy calls of exactly S bytes count
 *   DS_SHIM_MEMCPY_NTH=N    the N-th of them (from 1) in a process is tampered with:
 *   DS_SHIM_MEMCPY_SKIP=1   ... it copies nothing (a skipped copy), else it copies
 *                           and flips every bit of byte DS_SHIM_OFFSET of the
 *                           destination
 *   DS_SHIM_READ_NTH=N      the N-th read (IO_CMD_PREAD) io_getevents completes in a
 *                           process gets byte DS_SHIM_OFFSET of its buffer flipped
 *   DS_SHIM_READ_ERROR=E    ... instead completes with error E (an errno number,
 *                           e.g. 5 for EIO), as a failing disk would
 *   DS_SHIM_WRITE_NTH=N     the N-th write (IO_CMD_PWRITE) io_submit sends in a
 *                           process has byte DS_SHIM_OFFSET of its buffer flipped
 *                           before the kernel sees it (a corrupted write)
 *   DS_SHIM_WRITE_ERROR=E   ... instead completes with error E (io_getevents), its
 *                           bytes unwritten, as a failing disk would
 *   DS_SHIM_PWRITE_ENOSPC=N the N-th pwrite/pwrite64 call in a process fails with
 *                           ENOSPC, writing nothing (a disk that fills up)
 *   DS_SHIM_OFFSET=O        the byte flipped (default 0)
 *   DS_SHIM_PREAD=1         count pread/pread64 calls (aio --engine psync) as the
 *                           reads, instead of io_getevents completions
 *   DS_SHIM_PREAD_SHORT=B   a pread/pread64 call asking more than B bytes reads them
 *                           all but answers B, a short read (the caller must ask for
 *                           the rest, at an unaligned offset when B is not 4 KiB
 *                           aligned: EINVAL through O_DIRECT)
 *   DS_SHIM_PREAD_SHORT_NTH=N  only the N-th such call in a process (default 0: every one)
 *   DS_SHIM_WRITE_SHORT=B   a write of more than B bytes (and more than one 4 KiB page:
 *                           never the workspace's O_DIRECT probe), a pwrite/pwrite64
 *                           call or a libaio write completion, writes them all but with
 *                           every byte from B on flipped, and answers B: a short write
 *                           whose tail the caller must write again (from B's aligned
 *                           boundary below it through O_DIRECT; at B itself that is
 *                           EINVAL when B is not 4 KiB aligned)
 *   DS_SHIM_WRITE_SHORT_NTH=N  only the N-th such write in a process (default 0: every
 *                           one from DS_SHIM_WRITE_SHORT_FROM on)
 *   DS_SHIM_WRITE_SHORT_FROM=N every such write from the N-th on (default 1)
 *   DS_SHIM_TRUNCATE=B      the first read of more than 4 KiB in a process (a pread/
 *                           pread64 call, or a libaio read io_submit sends) first
 *                           truncates its file to that read's offset + B (truncate(2)
 *                           on the path behind the descriptor): a truncated shard or
 *                           block file whose end the read meets, at an offset O_DIRECT
 *                           cannot resume from when B is not 4 KiB aligned
 *
 * Every tampering is said on stderr ("corrupt_shim: ..."), so a test that sees no
 * failure can tell whether the shim did anything.
 *
 * It also stands for what DMA cannot reach: memory a test double registers with
 * ds_shim_no_dma_add() (the AscendCL double's aclrtMallocHost memory, which the real
 * driver maps so that the block layer cannot pin it: O_DIRECT reads into it fail with
 * EFAULT, UCM commit 734318ce / PR #850) is given to the kernel as an address it cannot
 * pin whenever an O_DIRECT read or write (pread/pwrite, libaio io_submit) uses it, so
 * the kernel itself answers EFAULT; buffered I/O into it works, as on the real card.
 * Always on while the shim is preloaded; said once per process on stderr. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if DS_SHIM_HAVE_LIBAIO
#include <libaio.h>
#endif

static size_t g_size;               /* DS_SHIM_MEMCPY_SIZE; 0: memcpy untouched */
static unsigned long g_nth;         /* DS_SHIM_MEMCPY_NTH */
static int g_skip;                  /* DS_SHIM_MEMCPY_SKIP */
static unsigned long g_read_nth;    /* DS_SHIM_READ_NTH; 0: reads untouched */
static size_t g_offset;             /* DS_SHIM_OFFSET */
static long g_read_error;           /* DS_SHIM_READ_ERROR; 0: reads keep their result */
static int g_pread;                 /* DS_SHIM_PREAD: the reads are pread calls */
static size_t g_pread_short;        /* DS_SHIM_PREAD_SHORT; 0: preads keep their length */
static unsigned long g_pread_short_nth; /* DS_SHIM_PREAD_SHORT_NTH; 0: every long pread */
static unsigned long g_long_preads; /* pread calls asking more than DS_SHIM_PREAD_SHORT */
static unsigned long g_write_nth;   /* DS_SHIM_WRITE_NTH; 0: writes untouched */
static long g_write_error;          /* DS_SHIM_WRITE_ERROR */
static unsigned long g_pwrite_enospc; /* DS_SHIM_PWRITE_ENOSPC */
static size_t g_write_short;         /* DS_SHIM_WRITE_SHORT; 0: writes keep their length */
static unsigned long g_write_short_nth;  /* DS_SHIM_WRITE_SHORT_NTH */
static unsigned long g_write_short_from; /* DS_SHIM_WRITE_SHORT_FROM */
static unsigned long g_long_writes;   /* writes of more than DS_SHIM_WRITE_SHORT (and 4 KiB) */
static unsigned long g_copies, g_reads, g_writes, g_pwrites;
static void* g_failing_write;       /* the iocb whose completion fails (DS_SHIM_WRITE_ERROR) */
static int g_truncate_on;           /* DS_SHIM_TRUNCATE given */
static unsigned long g_truncate;    /* DS_SHIM_TRUNCATE */
static int g_truncated;             /* the one truncation done */

static unsigned long env_ul(const char* name) {
  const char* v = getenv(name);
  return v && *v ? strtoul(v, NULL, 10) : 0;
}

__attribute__((constructor)) static void shim_init(void) {
  g_size = env_ul("DS_SHIM_MEMCPY_SIZE");
  g_nth = env_ul("DS_SHIM_MEMCPY_NTH");
  g_skip = env_ul("DS_SHIM_MEMCPY_SKIP") == 1;
  g_read_nth = env_ul("DS_SHIM_READ_NTH");
  g_offset = env_ul("DS_SHIM_OFFSET");
  g_read_error = (long)env_ul("DS_SHIM_READ_ERROR");
  g_pread = env_ul("DS_SHIM_PREAD") == 1;
  g_pread_short = (size_t)env_ul("DS_SHIM_PREAD_SHORT");
  g_pread_short_nth = env_ul("DS_SHIM_PREAD_SHORT_NTH");
  g_write_nth = env_ul("DS_SHIM_WRITE_NTH");
  g_write_error = (long)env_ul("DS_SHIM_WRITE_ERROR");
  g_pwrite_enospc = env_ul("DS_SHIM_PWRITE_ENOSPC");
  g_write_short = (size_t)env_ul("DS_SHIM_WRITE_SHORT");
  g_write_short_nth = env_ul("DS_SHIM_WRITE_SHORT_NTH");
  g_write_short_from = env_ul("DS_SHIM_WRITE_SHORT_FROM");
  g_truncate_on = getenv("DS_SHIM_TRUNCATE") != NULL;
  g_truncate = env_ul("DS_SHIM_TRUNCATE");
}

static void say(const char* what, unsigned long nth) {
  char line[160];
  const int n = snprintf(line, sizeof line, "corrupt_shim: pid %d: %s %lu\n", (int)getpid(), what, nth);
  if (n > 0) {
    ssize_t ignored = write(2, line, (size_t)n);
    (void)ignored;
  }
}

/* DS_SHIM_TRUNCATE: before the first read of more than 4 KiB of `fd` at `off`, its
 * file cut to off + B. */
static void truncate_before_read(int fd, size_t n, long long off) {
  if (!g_truncate_on || n <= 4096 || __atomic_exchange_n(&g_truncated, 1, __ATOMIC_ACQ_REL)) return;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t k = readlink(link, path, sizeof path - 1);
  if (k <= 0) return;
  path[k] = '\0';
  const long long at = off + (long long)g_truncate;
  if (truncate(path, (off_t)at) != 0) return;
  char line[4200];
  const int m = snprintf(line, sizeof line, "corrupt_shim: pid %d: truncated %s to %lld bytes\n", (int)getpid(), path, at);
  if (m > 0) {
    ssize_t ignored = write(2, line, (size_t)m);
    (void)ignored;
  }
}

/* libc's memmove does the copy: it is not interposed here, so no recursion and no
 * dlsym before the dynamic linker is ready (built with -fno-builtin, so the compiler
 * does not turn it back into a memcpy call). */
void* memcpy(void* restrict dst, const void* restrict src, size_t n) {
  if (g_size == 0 || n != g_size || g_nth == 0) return memmove(dst, src, n);
  const unsigned long k = __atomic_add_fetch(&g_copies, 1, __ATOMIC_SEQ_CST);
  if (k != g_nth) return memmove(dst, src, n);
  if (g_skip) {
    say("skipped memcpy", k);
    return dst;
  }
  memmove(dst, src, n);
  if (g_offset < n) ((unsigned char*)dst)[g_offset] ^= 0xFF;
  say("corrupted memcpy", k);
  return dst;
}

/* ---- memory DMA cannot reach ---- */
#include <fcntl.h>
#include <sys/mman.h>

#define NO_DMA_RANGES 256
static struct { uintptr_t lo, hi; } g_no_dma[NO_DMA_RANGES];
static int g_no_dma_lock;
static int g_no_dma_said;

static void no_dma_lock(void) {
  while (__atomic_exchange_n(&g_no_dma_lock, 1, __ATOMIC_ACQUIRE)) {
  }
}
static void no_dma_unlock(void) { __atomic_store_n(&g_no_dma_lock, 0, __ATOMIC_RELEASE); }

/* Called by a test double (found with dlsym(RTLD_DEFAULT, ...)). */
__attribute__((visibility("default"))) void ds_shim_no_dma_add(void* p, size_t n) {
  no_dma_lock();
  for (int i = 0; i < NO_DMA_RANGES; ++i)
    if (g_no_dma[i].hi == 0) {
      g_no_dma[i].lo = (uintptr_t)p;
      g_no_dma[i].hi = (uintptr_t)p + n;
      break;
    }
  no_dma_unlock();
}

__attribute__((visibility("default"))) void ds_shim_no_dma_remove(void* p) {
  no_dma_lock();
  for (int i = 0; i < NO_DMA_RANGES; ++i)
    if (g_no_dma[i].lo == (uintptr_t)p && g_no_dma[i].hi != 0) g_no_dma[i].lo = g_no_dma[i].hi = 0;
  no_dma_unlock();
}

static int no_dma(const void* buf, size_t n) {
  const uintptr_t lo = (uintptr_t)buf, hi = lo + n;
  int hit = 0;
  no_dma_lock();
  for (int i = 0; i < NO_DMA_RANGES && !hit; ++i)
    hit = g_no_dma[i].hi != 0 && lo < g_no_dma[i].hi && g_no_dma[i].lo < hi;
  no_dma_unlock();
  return hit;
}

/* An address range the kernel cannot pin (PROT_NONE, never backed), 1 GiB long. */
static void* unpinnable(void) {
  static void* at;
  void* p = __atomic_load_n(&at, __ATOMIC_ACQUIRE);
  if (p) return p;
  p = mmap(NULL, 1UL << 30, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return NULL;
  void* expected = NULL;
  if (!__atomic_compare_exchange_n(&at, &expected, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    munmap(p, 1UL << 30);
    p = expected;
  }
  return p;
}

/* The buffer an O_DIRECT transfer of fd gives the kernel: `buf`, or an address the
 * kernel cannot pin where `buf` is memory DMA cannot reach. */
static void* dma_target(int fd, void* buf, size_t n) {
  if (n == 0 || n > (1UL << 30) || !no_dma(buf, n)) return buf;
  const int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || !(fl & O_DIRECT)) return buf;
  void* bad = unpinnable();
  if (!bad) return buf;
  if (!__atomic_exchange_n(&g_no_dma_said, 1, __ATOMIC_ACQ_REL)) {
    char line[160];
    const int k = snprintf(line, sizeof line,
                           "corrupt_shim: pid %d: O_DIRECT I/O into memory DMA cannot reach: "
                           "the kernel answers EFAULT\n",
                           (int)getpid());
    if (k > 0) {
      ssize_t ignored = write(2, line, (size_t)k);
      (void)ignored;
    }
  }
  return bad;
}

/* ---- short writes (DS_SHIM_WRITE_SHORT) ---- */
#include <errno.h>
#include <sys/types.h>
typedef ssize_t (*pwrite_fn)(int, const void*, size_t, off_t);

static pwrite_fn real_pwrite(void) {
  static pwrite_fn real;
  if (!real) real = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite");
  return real;
}

/* Whether a write of `n` bytes is to come back short (counted when it could). */
static int write_goes_short(size_t n) {
  if (g_write_short == 0 || n <= g_write_short || n <= 4096) return 0;
  const unsigned long k = __atomic_add_fetch(&g_long_writes, 1, __ATOMIC_SEQ_CST);
  if (g_write_short_nth != 0 ? k != g_write_short_nth : k < (g_write_short_from ? g_write_short_from : 1)) return 0;
  if (k <= 3 || k == g_write_short_nth || k == g_write_short_from) say("short write", k);
  return 1;
}

/* The `n` bytes of `buf` written at `off` of `fd` with every byte from
 * DS_SHIM_WRITE_SHORT on flipped (a 4 KiB aligned copy: O_DIRECT takes it); B, or
 * what the write answered. */
static ssize_t short_garbled_write(int fd, const void* buf, size_t n, off_t off) {
  pwrite_fn real = real_pwrite();
  void* copy = NULL;
  if (!real || posix_memalign(&copy, 4096, n) != 0) {
    errno = ENOMEM;
    return -1;
  }
  memmove(copy, buf, n);
  for (size_t i = g_write_short; i < n; ++i) ((unsigned char*)copy)[i] ^= 0xFF;
  const ssize_t w = real(fd, copy, n, off);
  const int err = errno;
  free(copy);
  errno = err;
  if (w < 0) return w;
  return w > (ssize_t)g_write_short ? (ssize_t)g_write_short : w;
}

#if DS_SHIM_HAVE_LIBAIO
/* DS_SHIM_WRITE_NTH: the N-th write corrupted in its buffer now, or marked to fail. */
static void tamper_write(struct iocb* cb) {
  const unsigned long k = __atomic_add_fetch(&g_writes, 1, __ATOMIC_SEQ_CST);
  if (k != g_write_nth) return;
  if (g_write_error) {
    __atomic_store_n(&g_failing_write, (void*)cb, __ATOMIC_SEQ_CST);
    say("failing write", k);
  } else if (g_offset < (size_t)cb->u.c.nbytes) {
    ((unsigned char*)cb->u.c.buf)[g_offset] ^= 0xFF;
    say("corrupted write", k);
  }
}

typedef int (*submit_fn)(io_context_t, long, struct iocb**);

/* O_DIRECT reads and writes into memory DMA cannot reach go to the kernel with a
 * buffer it cannot pin; the caller's iocbs are as they were when this returns. */
int io_submit(io_context_t ctx, long nr, struct iocb** iocbs) {
  static submit_fn real;
  if (!real) {
    real = (submit_fn)dlvsym(RTLD_NEXT, "io_submit", "LIBAIO_0.1");
    if (!real) real = (submit_fn)dlsym(RTLD_NEXT, "io_submit");
    if (!real) return -38; /* -ENOSYS */
  }
  enum { kMax = 1024 };
  void* saved[kMax];
  const long m = nr < kMax ? nr : kMax;
  for (long i = 0; i < m; ++i) {
    struct iocb* cb = iocbs[i];
    saved[i] = NULL;
    if (!cb || (cb->aio_lio_opcode != IO_CMD_PREAD && cb->aio_lio_opcode != IO_CMD_PWRITE)) continue;
    if (cb->aio_lio_opcode == IO_CMD_PWRITE && g_write_nth != 0) tamper_write(cb);
    if (cb->aio_lio_opcode == IO_CMD_PREAD) truncate_before_read(cb->aio_fildes, (size_t)cb->u.c.nbytes, cb->u.c.offset);
    void* to = dma_target(cb->aio_fildes, cb->u.c.buf, cb->u.c.nbytes);
    if (to != cb->u.c.buf) {
      saved[i] = cb->u.c.buf;
      cb->u.c.buf = to;
    }
  }
  const int rc = real(ctx, nr, iocbs);
  for (long i = 0; i < m; ++i)
    if (saved[i]) iocbs[i]->u.c.buf = saved[i];
  return rc;
}

typedef int (*getevents_fn)(io_context_t, long, long, struct io_event*, struct timespec*);

int io_getevents(io_context_t ctx, long min_nr, long nr, struct io_event* events, struct timespec* timeout) {
  static getevents_fn real;
  if (!real) {
    real = (getevents_fn)dlvsym(RTLD_NEXT, "io_getevents", "LIBAIO_0.4");
    if (!real) real = (getevents_fn)dlsym(RTLD_NEXT, "io_getevents");
    if (!real) return -38; /* -ENOSYS */
  }
  const int got = real(ctx, min_nr, nr, events, timeout);
  if (got <= 0) return got;
  void* failing = __atomic_load_n(&g_failing_write, __ATOMIC_SEQ_CST);
  for (int i = 0; failing && i < got; ++i)
    if ((void*)events[i].obj == failing) {
      events[i].res = (unsigned long)(-g_write_error);
      __atomic_store_n(&g_failing_write, NULL, __ATOMIC_SEQ_CST);
      failing = NULL;
    }
  for (int i = 0; g_write_short && i < got; ++i) {
    struct iocb* cb = events[i].obj;
    if (!cb || cb->aio_lio_opcode != IO_CMD_PWRITE || (long)events[i].res != (long)cb->u.c.nbytes ||
        !write_goes_short((size_t)cb->u.c.nbytes))
      continue;
    const ssize_t w = short_garbled_write(cb->aio_fildes, cb->u.c.buf, (size_t)cb->u.c.nbytes, (off_t)cb->u.c.offset);
    events[i].res = w < 0 ? (unsigned long)(-(long)errno) : (unsigned long)w;
  }
  if (g_read_nth == 0) return got;
  for (int i = 0; i < got; ++i) {
    struct iocb* cb = events[i].obj;
    if (!cb || cb->aio_lio_opcode != IO_CMD_PREAD || (long)events[i].res <= 0) continue;
    const unsigned long k = __atomic_add_fetch(&g_reads, 1, __ATOMIC_SEQ_CST);
    if (k == g_read_nth && g_read_error) {
      events[i].res = (unsigned long)(-g_read_error);
      say("failed read", k);
    } else if (k == g_read_nth && g_offset < (size_t)events[i].res) {
      ((unsigned char*)cb->u.c.buf)[g_offset] ^= 0xFF;
      say("corrupted read", k);
    }
  }
  return got;
}
#endif

/* psync's reads: pread (pread64 where off_t is 64-bit by request), with
 * DS_SHIM_PREAD=1 only. */
#include <errno.h>
#include <sys/types.h>
typedef ssize_t (*pread_fn)(int, void*, size_t, off_t);

static ssize_t tamper_pread(const char* name, pread_fn* real, int fd, void* buf, size_t n, off_t off) {
  if (!*real) {
    *real = (pread_fn)dlsym(RTLD_NEXT, name);
    if (!*real) {
      errno = ENOSYS;
      return -1;
    }
  }
  truncate_before_read(fd, n, (long long)off);
  void* to = dma_target(fd, buf, n);
  if (to != buf) return (*real)(fd, to, n, off);  /* the kernel answers EFAULT */
  ssize_t got = (*real)(fd, buf, n, off);
  if (g_pread_short != 0 && n > g_pread_short && got > (ssize_t)g_pread_short) {
    const unsigned long k = __atomic_add_fetch(&g_long_preads, 1, __ATOMIC_SEQ_CST);
    if (g_pread_short_nth == 0 || k == g_pread_short_nth) {
      if (k == 1 || k == g_pread_short_nth) say("short pread", k);
      got = (ssize_t)g_pread_short;
    }
  }
  if (!g_pread || g_read_nth == 0 || got <= 0) return got;
  const unsigned long k = __atomic_add_fetch(&g_reads, 1, __ATOMIC_SEQ_CST);
  if (k == g_read_nth && g_read_error) {
    say("failed read", k);
    errno = (int)g_read_error;
    return -1;
  }
  if (k == g_read_nth && g_offset < (size_t)got) {
    ((unsigned char*)buf)[g_offset] ^= 0xFF;
    say("corrupted read", k);
  }
  return got;
}

ssize_t pread(int fd, void* buf, size_t n, off_t off) {
  static pread_fn real;
  return tamper_pread("pread", &real, fd, buf, n, off);
}

ssize_t pread64(int fd, void* buf, size_t n, off_t off) {
  static pread_fn real;
  return tamper_pread("pread64", &real, fd, buf, n, off);
}

/* O_DIRECT writes from memory DMA cannot reach fail as the reads do. */

static ssize_t checked_pwrite(const char* name, pwrite_fn* real, int fd, const void* buf, size_t n, off_t off) {
  if (!*real) {
    *real = (pwrite_fn)dlsym(RTLD_NEXT, name);
    if (!*real) {
      errno = ENOSYS;
      return -1;
    }
  }
  if (g_pwrite_enospc != 0 && __atomic_add_fetch(&g_pwrites, 1, __ATOMIC_SEQ_CST) == g_pwrite_enospc) {
    say("pwrite answered ENOSPC", g_pwrite_enospc);
    errno = ENOSPC;
    return -1;
  }
  void* to = dma_target(fd, (void*)buf, n);
  if (to == buf && write_goes_short(n)) return short_garbled_write(fd, buf, n, off);
  return (*real)(fd, to, n, off);
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  static pwrite_fn real;
  return checked_pwrite("pwrite", &real, fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off_t off) {
  static pwrite_fn real;
  return checked_pwrite("pwrite64", &real, fd, buf, n, off);
}
