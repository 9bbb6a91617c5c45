/* One file's bytes in memory: mapped once read-only, or read with pread/read into the heap. */
#include "internal.h"

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

/* A pipe, a terminal or /dev/stdin has no size to trust: read until EOF, doubling the buffer. */
static tm_status read_stream(int fd, uint8_t **out, uint64_t *size, tm_error *err)
{
    size_t cap = 1u << 16, len = 0;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory reading the input");
    for (;;) {
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
        ssize_t n = read(fd, buf + len, cap - len);
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

tm_status tm__map_open(tm__map *m, const char *path, unsigned flags, tm_error *err)
{
    memset(m, 0, sizeof *m);
    m->path = strdup(path);
    if (!m->path)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");

    const bool is_stdin = strcmp(path, "-") == 0;
    if (is_stdin)
        flags |= TM_OPEN_NO_MMAP; /* even when it is a regular file: the header promises a copy */
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        tm_status st = io_fail(err, "cannot open", errno);
        tm__map_close(m);
        return st;
    }
    struct stat sb;
    tm_status st = TM_OK;
    uint8_t *heap = NULL;
    if (fstat(fd, &sb) != 0) {
        st = io_fail(err, "cannot stat", errno);
    } else if (S_ISDIR(sb.st_mode)) {
        st = tm__fail(err, TM_IO, TM_NO_OFFSET, "is a directory, not a model file");
    } else if (!S_ISREG(sb.st_mode)) {
        st = read_stream(fd, &heap, &m->size, err);
    } else if ((flags & TM_OPEN_NO_MMAP) || sb.st_size == 0) {
        /* mmap of length 0 fails with EINVAL: an empty file is read (as nothing) and refused
         * by the caller as too short, with a message that says so. */
        m->size = (uint64_t)sb.st_size;
        st = read_file(fd, m->size, &heap, err);
    } else {
        m->size = (uint64_t)sb.st_size;
        m->dev = sb.st_dev;
        m->ino = sb.st_ino;
        m->mtime = sb.st_mtim;
        void *p = mmap(NULL, (size_t)m->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            st = io_fail(err, "mmap failed", errno);
        } else {
            m->base = p;
            m->kind = TM__MAP_MMAP;
        }
    }
    if (heap) {
        m->base = heap;
        m->kind = TM__MAP_HEAP;
    }
    if (!is_stdin)
        close(fd); /* the mapping keeps its own reference to the file */
    if (st != TM_OK)
        tm__map_close(m);
    return st;
}

void tm__map_close(tm__map *m)
{
    if (m->kind == TM__MAP_MMAP)
        munmap((void *)(uintptr_t)m->base, (size_t)m->size);
    else if (m->kind == TM__MAP_HEAP)
        free((void *)(uintptr_t)m->base);
    free(m->path);
    memset(m, 0, sizeof *m);
}
