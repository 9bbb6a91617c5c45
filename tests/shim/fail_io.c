/* An LD_PRELOAD shim for the tests: it counts the calls that write to a file or put one in
 * place (write and writev to descriptors other than the standard streams, pwrite,
 * copy_file_range, ftruncate, fsync, fdatasync, rename), from 1, and acts on one of them:
 *
 * - TM_FAIL_AT=N: the Nth call fails with ENOSPC, as a full disk would, so that a test can fail
 *   a write at every step of the tool's and library's output path. Nothing fails once a rename
 *   has succeeded: after that the new file is in place, and what is left (syncing the
 *   directory) cannot lose the original.
 * - TM_STOP_AT=N, or TM_STOP_AT_PATH=TEXT (the first call on a file whose path holds TEXT): the
 *   process stops itself (SIGSTOP) just before that call, in the middle of writing, so that a
 *   test can look at the files and send it a signal at a known point.
 *
 * Standard streams pass through (the tool's own messages). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
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

static int fail_fd(const char *what, int fd)
{
    char buf[4096];
    return fail_now(what, fd_path(fd, buf, sizeof buf));
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

ssize_t write(int fd, const void *p, size_t n)
{
    return fd > 2 && fail_fd("write", fd) ? -1 : REAL(write)(fd, p, n);
}

ssize_t pwrite(int fd, const void *p, size_t n, off_t at)
{
    return fail_fd("pwrite", fd) ? -1 : REAL(pwrite)(fd, p, n, at);
}

ssize_t pwrite64(int fd, const void *p, size_t n, off64_t at)
{
    return fail_fd("pwrite64", fd) ? -1 : REAL(pwrite64)(fd, p, n, at);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
    return fd > 2 && fail_fd("writev", fd) ? -1 : REAL(writev)(fd, iov, n);
}

ssize_t copy_file_range(int in, loff_t *in_at, int out, loff_t *out_at, size_t n, unsigned fl)
{
    return fail_fd("copy_file_range", out) ? -1
                                           : REAL(copy_file_range)(in, in_at, out, out_at, n, fl);
}

int ftruncate(int fd, off_t n) { return fail_fd("ftruncate", fd) ? -1 : REAL(ftruncate)(fd, n); }
int ftruncate64(int fd, off64_t n)
{
    return fail_fd("ftruncate64", fd) ? -1 : REAL(ftruncate64)(fd, n);
}
int fsync(int fd) { return fail_fd("fsync", fd) ? -1 : REAL(fsync)(fd); }
int fdatasync(int fd) { return fail_fd("fdatasync", fd) ? -1 : REAL(fdatasync)(fd); }

int rename(const char *from, const char *to)
{
    if (fail_now("rename", from))
        return -1;
    int r = REAL(rename)(from, to);
    if (r == 0)
        renamed = 1;
    return r;
}
