/* One file's bytes: mapped once read-only, read with pread/read into the heap, or (http.c) a
 * remote file's head with its tensor bytes fetched on demand. */
#include "../common/internal.h"

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

uint64_t tm__env_bytes(const char *name, uint64_t dflt)
{
    const char *e = getenv(name);
    char *end;
    if (!e || !*e)
        return dflt;
    unsigned long long v = strtoull(e, &end, 10);
    unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (end == e || (shift && end[1]) || (!shift && *end) || v > (UINT64_MAX >> shift))
        return dflt; /* not a number: the default, not "no limit" */
    return (uint64_t)v << shift;
}

/* Enough of the first bytes to tell a model from anything else (file.c's recognisers). */
#define SNIFF_BYTES 16u

/* A pipe, a character device, a FIFO or a file whose size the kernel does not know (procfs) is
 * read until EOF, doubling the buffer. Its first bytes are looked at before the rest is read:
 * /dev/zero or a log file is refused at once by the caller (from those bytes), not read to the
 * end of memory. The whole read is capped by TM_STREAM_LIMIT (tm__env_bytes). */
static tm_status read_stream(int fd, uint8_t **out, uint64_t *size, tm_error *err)
{
    size_t cap = 1u << 16, len = 0;
    const uint64_t limit = tm__env_bytes("TM_STREAM_LIMIT", TM_DEFAULT_STREAM_LIMIT);
    uint8_t *buf = malloc(cap);
    if (!buf)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory reading the input");
    for (bool sniffed = false;;) {
        if (!sniffed && len >= SNIFF_BYTES) {
            sniffed = true;
            if (!tm__looks_like_model(buf, len))
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

tm_status tm__map_open(tm__map *m, const char *path, unsigned flags, tm__head_budget *budget,
                       tm_error *err)
{
    memset(m, 0, sizeof *m);
    if (tm__is_url(path))
        return tm__remote_open(m, path, budget, err);
    m->path = strdup(path);
    if (!m->path)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");

    const bool is_stdin = strcmp(path, "-") == 0;
    if (is_stdin)
        flags |= TM_OPEN_NO_MMAP; /* even when it is a regular file: the header promises a copy */
    /* a shard's open does not wait for a FIFO's writer: its fstat below refuses it */
    const int nonblock = flags & TM__MAP_REGULAR_ONLY ? O_NONBLOCK : 0;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC | nonblock);
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
    } else if ((flags & TM__MAP_REGULAR_ONLY) && !S_ISREG(sb.st_mode)) {
        /* checked on the file opened, not only on the path before: no swap in between */
        st = tm__fail(err, TM_IO, TM_NO_OFFSET, "is not a regular file (a shard must be)");
    } else if (S_ISDIR(sb.st_mode)) {
        st = tm__fail(err, TM_IO, TM_NO_OFFSET, "is a directory, not a model file");
    } else if (!S_ISREG(sb.st_mode) || sb.st_size == 0) {
        /* A size of 0 may be procfs not knowing it (/proc/self/environ): read what is there.
         * A really empty file reads as nothing and is refused by the caller as empty. */
        st = read_stream(fd, &heap, &m->size, err);
    } else if (flags & TM_OPEN_NO_MMAP) {
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
    m->avail = m->size;
    return st;
}

tm_status tm__map_need(tm__map *m, uint64_t end, tm_error *err)
{
    return m->kind == TM__MAP_REMOTE && end > m->avail && m->avail < m->size
               ? tm__remote_need(m, end, err)
               : TM_OK;
}

tm_status tm__map_read(const tm__map *m, uint64_t offset, uint64_t len, void *buf,
                       tm_error *err)
{
    uint64_t end;
    if (!tm__add_u64(offset, len, &end) || end > m->size)
        return tm__fail(err, TM_INVALID_ARG, offset,
                        "bytes [%llu, +%llu) are outside the %llu-byte file",
                        (unsigned long long)offset, (unsigned long long)len,
                        (unsigned long long)m->size);
    if (end <= m->avail) {
        if (len)
            memcpy(buf, m->base + offset, (size_t)len);
        return TM_OK;
    }
    return tm__remote_read(m, offset, len, buf, err);
}

void tm__map_close(tm__map *m)
{
    if (m->kind == TM__MAP_MMAP)
        munmap((void *)(uintptr_t)m->base, (size_t)m->size);
    else if (m->kind == TM__MAP_HEAP)
        free((void *)(uintptr_t)m->base);
    else if (m->kind == TM__MAP_REMOTE)
        tm__remote_close(m); /* frees the head at base */
    free(m->path);
    memset(m, 0, sizeof *m);
}
