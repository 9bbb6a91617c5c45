/* An LD_PRELOAD shim for the tests: the Nth call (TM_FAIL_AT=N, from 1) that writes to a file
 * or puts one in place fails with ENOSPC, as a full disk would, so that a test can fail a write
 * at every step of the tool's and library's output path. Standard streams pass through (the
 * tool's own messages), and nothing fails once a rename has succeeded: after that the new file
 * is in place, and what is left (syncing the directory) cannot lose the original. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static long calls;
static int renamed;

/* Whether this call is the one to fail (counting only calls that could fail). */
static int fail_now(const char *what)
{
    if (renamed)
        return 0;
    const char *at = getenv("TM_FAIL_AT");
    if (!at || ++calls != atol(at))
        return 0;
    fprintf(stderr, "fail_io: failing call %ld (%s)\n", calls, what);
    errno = ENOSPC;
    return 1;
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

ssize_t write(int fd, const void *p, size_t n)
{
    return fd > 2 && fail_now("write") ? -1 : REAL(write)(fd, p, n);
}

ssize_t pwrite(int fd, const void *p, size_t n, off_t at)
{
    return fail_now("pwrite") ? -1 : REAL(pwrite)(fd, p, n, at);
}

ssize_t pwrite64(int fd, const void *p, size_t n, off64_t at)
{
    return fail_now("pwrite64") ? -1 : REAL(pwrite64)(fd, p, n, at);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
    return fd > 2 && fail_now("writev") ? -1 : REAL(writev)(fd, iov, n);
}

ssize_t copy_file_range(int in, loff_t *in_at, int out, loff_t *out_at, size_t n, unsigned fl)
{
    return fail_now("copy_file_range") ? -1 : REAL(copy_file_range)(in, in_at, out, out_at, n, fl);
}

int ftruncate(int fd, off_t n) { return fail_now("ftruncate") ? -1 : REAL(ftruncate)(fd, n); }
int ftruncate64(int fd, off64_t n) { return fail_now("ftruncate64") ? -1 : REAL(ftruncate64)(fd, n); }
int fsync(int fd) { return fail_now("fsync") ? -1 : REAL(fsync)(fd); }
int fdatasync(int fd) { return fail_now("fdatasync") ? -1 : REAL(fdatasync)(fd); }

int rename(const char *from, const char *to)
{
    if (fail_now("rename"))
        return -1;
    int r = REAL(rename)(from, to);
    renamed = r == 0;
    return r;
}
