/* A local file's bytes: mapped once read-only, or read with pread/read into the heap (a stream,
 * or TM_OPEN_NO_MMAP), or a caller's buffer borrowed. Each way holds the whole file at base,
 * so that any range is a view; they differ only in what closing releases. */
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static tm_status io_fail(tm_error *err, const char *what, int errnum)
{
    return tm__fail(err, errnum == ENOENT ? TM_NOT_FOUND : errnum == ENOMEM ? TM_NOMEM : TM_IO,
                    TM_NO_OFFSET, "%s: %s", what, strerror(errnum));
}

/* ---- the three ways to hold a whole file ---------------------------------------------------- */

/* What a mapped file was when it was opened, so that a writer can tell whether its path still
 * names that file (and copy from it by descriptor). */
typedef struct identity {
    dev_t dev;
    ino_t ino;
    struct timespec mtime;
} identity;

static void close_mapped(tm__source *s)
{
    munmap((void *)(uintptr_t)s->base, (size_t)s->size);
    free(s->impl);
}

static int reopen_mapped(const tm__source *s)
{
    const identity *id = s->impl;
    int fd = open(s->path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd >= 0 && fstat(fd, &sb) == 0 && sb.st_dev == id->dev && sb.st_ino == id->ino &&
        (uint64_t)sb.st_size == s->size && sb.st_mtim.tv_sec == id->mtime.tv_sec &&
        sb.st_mtim.tv_nsec == id->mtime.tv_nsec)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

static void close_heap(tm__source *s) { free((void *)(uintptr_t)s->base); }

static void close_borrowed(tm__source *s) { (void)s; }

static const tm__source_ops mapped_ops = {.close = close_mapped, .reopen = reopen_mapped};
static const tm__source_ops heap_ops = {.close = close_heap};
static const tm__source_ops borrowed_ops = {.close = close_borrowed};

void tm__local_borrow(tm__source *s, const void *buf, uint64_t len)
{
    s->base = buf;
    s->size = s->avail = len;
    s->ops = &borrowed_ops;
}

/* ---- reading ------------------------------------------------------------------------------- */

/* Enough of the first bytes to tell a model from anything else (the caller's accept). */
#define SNIFF_BYTES 16u

/* A pipe, a character device, a FIFO or a file whose size the kernel does not know (procfs) is
 * read until EOF, doubling the buffer. Its first bytes are looked at before the rest is read:
 * /dev/zero or a log file is refused at once by the caller (from those bytes, when accept says
 * no), not read to the end of memory. The whole read is capped by TM_STREAM_LIMIT. */
static tm_status read_stream(int fd, bool (*accept)(const uint8_t *, uint64_t), uint8_t **out,
                             uint64_t *size, tm_error *err)
{
    size_t cap = 1u << 16, len = 0;
    const uint64_t limit = tm__env_bytes("TM_STREAM_LIMIT", TM_DEFAULT_STREAM_LIMIT);
    uint8_t *buf = malloc(cap);
    if (!buf)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory reading the input");
    for (bool sniffed = false;;) {
        if (!sniffed && len >= SNIFF_BYTES) {
            sniffed = true;
            if (accept && !accept(buf, len))
                break; /* the caller names what it found in these bytes */
        }
        if (len == cap) {
            uint8_t *grown = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!grown) {
                free(buf);
                return tm__fail(err, TM_NOMEM, TM_NO_OFFSET,
                                "out of memory after reading %zu bytes of the input", len);
            }
            buf = grown;
            cap *= 2;
        }
        /* a few bytes at first, so that the sniff does not wait for a whole buffer */
        size_t want = len < SNIFF_BYTES ? SNIFF_BYTES - len : cap - len;
        ssize_t n = read(fd, buf + len, want);
        if (n == 0)
            break;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(buf);
            return io_fail(err, "read failed", e);
        }
        len += (size_t)n;
        if (len > limit) {
            free(buf);
            return tm__fail(err, TM_LIMIT, limit,
                            "the input is a stream longer than the limit of %llu bytes (set "
                            "TM_STREAM_LIMIT to read more)", (unsigned long long)limit);
        }
    }
    *out = buf;
    *size = len;
    return TM_OK;
}

/* A regular file read whole with pread: immune to the file changing afterwards. */
static tm_status read_file(int fd, uint64_t size, uint8_t **out, tm_error *err)
{
    uint8_t *buf = malloc(size ? (size_t)size : 1);
    if (!buf)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory reading a %llu-byte file",
                        (unsigned long long)size);
    uint64_t done = 0;
    while (done < size) {
        ssize_t n = pread(fd, buf + done, (size_t)(size - done), (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : 0;
            free(buf);
            if (n == 0)
                return tm__fail(err, TM_IO, done,
                                "the file shrank while being read: %llu of %llu bytes",
                                (unsigned long long)done, (unsigned long long)size);
            return io_fail(err, "read failed", e);
        }
        done += (uint64_t)n;
    }
    *out = buf;
    return TM_OK;
}

static tm_status map_file(tm__source *s, int fd, const struct stat *sb, tm_error *err)
{
    identity *id = malloc(sizeof *id);
    if (!id)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    *id = (identity){sb->st_dev, sb->st_ino, sb->st_mtim};
    void *p = mmap(NULL, (size_t)s->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        free(id);
        return io_fail(err, "mmap failed", e);
    }
    s->base = p;
    s->impl = id;
    s->ops = &mapped_ops;
    return TM_OK;
}

tm_status tm__local_open(tm__source *s, const tm__source_opts *o, tm_error *err)
{
    const bool is_stdin = strcmp(s->path, "-") == 0;
    /* standard input is copied even when it is a regular file: the header promises a copy */
    const bool no_mmap = is_stdin || (o->flags & TM_OPEN_NO_MMAP);
    /* a shard's open does not wait for a FIFO's writer: its fstat below refuses it */
    const int nonblock = o->regular_only ? O_NONBLOCK : 0;
    int fd = is_stdin ? STDIN_FILENO : open(s->path, O_RDONLY | O_CLOEXEC | nonblock);
    if (fd < 0)
        return io_fail(err, "cannot open", errno);
    struct stat sb;
    tm_status st = TM_OK;
    uint8_t *heap = NULL;
    if (fstat(fd, &sb) != 0) {
        st = io_fail(err, "cannot stat", errno);
    } else if (o->regular_only && !S_ISREG(sb.st_mode)) {
        /* checked on the file opened, not only on the path before: no swap in between */
        st = tm__fail(err, TM_IO, TM_NO_OFFSET, "is not a regular file (a shard must be)");
    } else if (S_ISDIR(sb.st_mode)) {
        st = tm__fail(err, TM_IO, TM_NO_OFFSET, "is a directory, not a model file");
    } else if (!S_ISREG(sb.st_mode) || sb.st_size == 0) {
        /* A size of 0 may be procfs not knowing it (/proc/self/environ): read what is there.
         * A really empty file reads as nothing and is refused by the caller as empty. */
        st = read_stream(fd, o->accept, &heap, &s->size, err);
    } else if (no_mmap) {
        s->size = (uint64_t)sb.st_size;
        st = read_file(fd, s->size, &heap, err);
    } else {
        s->size = (uint64_t)sb.st_size;
        st = map_file(s, fd, &sb, err);
    }
    if (heap) {
        s->base = heap;
        s->ops = &heap_ops;
    }
    if (!is_stdin)
        close(fd); /* the mapping keeps its own reference to the file */
    s->avail = s->size;
    return st;
}
