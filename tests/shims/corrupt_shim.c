/* An LD_PRELOAD shim for the validation tests: it makes exactly one copy or one
 * read in a dev-sandbox process deliver wrong bytes, so a test can show which
 * --validate catches it (tests/e2e/test_validate_each.cc, test_aio_e2e.cc).
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
 *   DS_SHIM_OFFSET=O        the byte flipped (default 0)
 *   DS_SHIM_PREAD=1         count pread/pread64 calls (aio --engine psync) as the
 *                           reads, instead of io_getevents completions
 *
 * Every tampering is said on stderr ("corrupt_shim: ..."), so a test that sees no
 * failure can tell whether the shim did anything. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
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
static unsigned long g_copies, g_reads;

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
}

static void say(const char* what, unsigned long nth) {
  char line[160];
  const int n = snprintf(line, sizeof line, "corrupt_shim: pid %d: %s %lu\n", (int)getpid(), what, nth);
  if (n > 0) {
    ssize_t ignored = write(2, line, (size_t)n);
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

#if DS_SHIM_HAVE_LIBAIO
typedef int (*getevents_fn)(io_context_t, long, long, struct io_event*, struct timespec*);

int io_getevents(io_context_t ctx, long min_nr, long nr, struct io_event* events, struct timespec* timeout) {
  static getevents_fn real;
  if (!real) {
    real = (getevents_fn)dlvsym(RTLD_NEXT, "io_getevents", "LIBAIO_0.4");
    if (!real) real = (getevents_fn)dlsym(RTLD_NEXT, "io_getevents");
    if (!real) return -38; /* -ENOSYS */
  }
  const int got = real(ctx, min_nr, nr, events, timeout);
  if (g_read_nth == 0 || got <= 0) return got;
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
  const ssize_t got = (*real)(fd, buf, n, off);
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
