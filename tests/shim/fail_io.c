/* An LD_PRELOAD shim for the tests: it counts the calls that write to a file or put one in
 * place (write and writev to descriptors other than the standard streams, pwrite,
 * copy_file_range, ftruncate, fsync, fdatasync, rename), from 1, and acts on one of them:
 *
 * - TM_FAIL_AT=N: the Nth call fails with ENOSPC, as a full disk would, so that a test can fail
 *   a write at every step of the tool's and library's output path. Nothing fails once a rename
 *   to a visible name has succeeded: after that a new file is in place, and what is left
 *   (syncing the directory, the other files of a set) cannot lose the original. A rename to a
 *   hidden name (a file of a set, staged whole before the set goes into place) is a step like
 *   any other.
 * - TM_STOP_AT=N, or TM_STOP_AT_PATH=TEXT (the first call on a file whose path holds TEXT): the
 *   process stops itself (SIGSTOP) just before that call, in the middle of writing, so that a
 *   test can look at the files and send it a signal at a known point.
 * - TM_CRASH_AT=N: the process is killed (SIGKILL: nothing of it runs after) at the Nth call, as
 *   a crash would cut it; a pwrite or write is torn first, half of its bytes written.
 * - TM_IO_LOG=FILE: every counted call is appended to FILE as a line "CALL PATH OFFSET BYTES"
 *   (rename: "rename FROM 0 0"), so that a test can see what was written where.
 *
 * Standard streams pass through (the tool's own messages). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static long calls;
static int renamed, stopped;

/* The path behind fd (from /proc), into buf. */
static const char *fd_path(int fd, char *buf, size_t size)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, buf, size - 1);
    buf[n < 0 ? 0 : n] = '\0';
    return buf;
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

static void log_call(const char *what, const char *path, long long at, size_t n)
{
    const char *log = getenv("TM_IO_LOG");
    if (!log)
        return;
    char line[4400];
    int len = snprintf(line, sizeof line, "%s %s %lld %zu\n", what, path ? path : "?", at, n);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0 && len > 0) {
        ssize_t unused = REAL(write)(fd, line, (size_t)len < sizeof line ? (size_t)len : sizeof line);
        (void)unused;
    }
    if (fd >= 0)
        close(fd);
}

/* The Nth call of TM_CRASH_AT: killed, a write torn first (half of it goes out). */
static void crash_now(int fd, const void *p, size_t n, long long at)
{
    const char *crash = getenv("TM_CRASH_AT");
    if (!crash || calls != atol(crash))
        return;
    if (p && n > 1) {
        ssize_t unused = at < 0 ? REAL(write)(fd, p, n / 2) : REAL(pwrite)(fd, p, n / 2, at);
        (void)unused;
    }
    raise(SIGKILL);
}

/* Whether this call (on the file at path) is the one to fail; stops first when it is the one
 * to stop at. */
static int fail_now(const char *what, const char *path)
{
    ++calls;
    const char *stop_at = getenv("TM_STOP_AT"), *stop_path = getenv("TM_STOP_AT_PATH");
    if (!stopped && ((stop_at && calls == atol(stop_at)) ||
                     (stop_path && path && strstr(path, stop_path)))) {
        stopped = 1;
        raise(SIGSTOP);
    }
    const char *at = getenv("TM_FAIL_AT");
    if (renamed || !at || calls != atol(at))
        return 0;
    fprintf(stderr, "fail_io: failing call %ld (%s)\n", calls, what);
    errno = ENOSPC;
    return 1;
}

/* A call on fd writing n bytes (p: the bytes, for a torn write) at offset at (-1: the file's
 * position): logged, crashed or failed as asked. */
static int fail_fd(const char *what, int fd, const void *p, size_t n, long long at)
{
    char buf[4096];
    const char *path = fd_path(fd, buf, sizeof buf);
    const int failing = fail_now(what, path);
    log_call(what, path, at < 0 ? (long long)lseek(fd, 0, SEEK_CUR) : at, n);
    crash_now(fd, p, n, at);
    return failing;
}

static size_t iov_bytes(const struct iovec *iov, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    return total;
}

ssize_t write(int fd, const void *p, size_t n)
{
    return fd > 2 && fail_fd("write", fd, p, n, -1) ? -1 : REAL(write)(fd, p, n);
}

ssize_t pwrite(int fd, const void *p, size_t n, off_t at)
{
    return fail_fd("pwrite", fd, p, n, at) ? -1 : REAL(pwrite)(fd, p, n, at);
}

ssize_t pwrite64(int fd, const void *p, size_t n, off64_t at)
{
    return fail_fd("pwrite64", fd, p, n, at) ? -1 : REAL(pwrite64)(fd, p, n, at);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
    return fd > 2 && fail_fd("writev", fd, NULL, iov_bytes(iov, n), -1) ? -1
                                                                         : REAL(writev)(fd, iov, n);
}

ssize_t copy_file_range(int in, loff_t *in_at, int out, loff_t *out_at, size_t n, unsigned fl)
{
    return fail_fd("copy_file_range", out, NULL, n, out_at ? *out_at : -1)
               ? -1
               : REAL(copy_file_range)(in, in_at, out, out_at, n, fl);
}

int ftruncate(int fd, off_t n)
{
    return fail_fd("ftruncate", fd, NULL, 0, n) ? -1 : REAL(ftruncate)(fd, n);
}
int ftruncate64(int fd, off64_t n)
{
    return fail_fd("ftruncate64", fd, NULL, 0, n) ? -1 : REAL(ftruncate64)(fd, n);
}
int fsync(int fd) { return fail_fd("fsync", fd, NULL, 0, 0) ? -1 : REAL(fsync)(fd); }
int fdatasync(int fd) { return fail_fd("fdatasync", fd, NULL, 0, 0) ? -1 : REAL(fdatasync)(fd); }

int rename(const char *from, const char *to)
{
    const int failing = fail_now("rename", from);
    log_call("rename", from, 0, 0);
    crash_now(-1, NULL, 0, 0);
    if (failing)
        return -1;
    int r = REAL(rename)(from, to);
    const char *slash = strrchr(to, '/');
    if (r == 0 && (slash ? slash[1] : to[0]) != '.')
        renamed = 1;
    return r;
}
