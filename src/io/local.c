/* A local file's bytes: mapped once read-only, or read with pread/read into the heap (a stream,
 * or TM_OPEN_NO_MMAP), or a caller's buffer borrowed. Each of these holds the whole file at
 * base, so that any range is a view; they differ only in what closing releases. A regular file
 * opened with TM_OPEN_NO_MMAP that is larger than TM_READ_WHOLE_LIMIT is not read whole: its
 * head is read as the header walk asks for it, and tensor bytes when they are asked for, as a
 * remote file's are, so that a header command on a 5 GB file reads its header only. */
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

/* A regular file larger than TM_READ_WHOLE_LIMIT read as needed: its first read. */
#define HEAD_FIRST (1ull << 20)

/* A regular file that stays open (mapped, or read as needed): what it was when it was opened,
 * so that a writer can tell whether its path still names that file (and copy from it by
 * descriptor), and a read as needed whether the file changed under it. */
typedef struct local_file {
    dev_t dev;
    ino_t ino;
    struct timespec mtime;
    int fd; /* read as needed: the file, kept open; mapped: -1 */
} local_file;

static bool unchanged(const local_file *lf, const struct stat *sb, uint64_t size)
{
    return sb->st_dev == lf->dev && sb->st_ino == lf->ino && (uint64_t)sb->st_size == size &&
           sb->st_mtim.tv_sec == lf->mtime.tv_sec && sb->st_mtim.tv_nsec == lf->mtime.tv_nsec;
}

static int reopen_file(const tm__source *s)
{
    int fd = open(s->path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd >= 0 && fstat(fd, &sb) == 0 && unchanged(s->impl, &sb, s->size))
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

/* ---- the three ways to hold a whole file ---------------------------------------------------- */

static void close_mapped(tm__source *s)
{
    munmap((void *)(uintptr_t)s->base, (size_t)s->size);
    free(s->impl);
}

static void close_heap(tm__source *s) { free((void *)(uintptr_t)s->base); }

static void close_borrowed(tm__source *s) { (void)s; }

/* ---- asking for pages ahead (tm_prefetch) ------------------------------------------------ */

/* posix_fadvise(WILLNEED) on fd: the kernel starts reading the range into the page cache. */
static void fadvise_willneed(int fd, uint64_t offset, uint64_t len)
{
    (void)posix_fadvise(fd, (off_t)offset, (off_t)len, POSIX_FADV_WILLNEED);
}

/* A mapped file: madvise on the pages of the range, or posix_fadvise on a new descriptor of the
 * file (the mapping kept none) while it is still the file mapped. */
static bool advise_mapped(const tm__source *s, uint64_t offset, uint64_t len, tm__advice how)
{
    if (how == TM__ADVISE_FADVISE) {
        const int fd = reopen_file(s);
        if (fd < 0)
            return false;
        fadvise_willneed(fd, offset, len);
        close(fd);
        return true;
    }
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t start = (uintptr_t)(s->base + offset), first = start & ~(page - 1);
    (void)madvise((void *)first, (size_t)(start - first + len), MADV_WILLNEED);
    return true;
}

/* A file read as needed keeps its descriptor: posix_fadvise on it, whatever how says. */
static bool advise_later(const tm__source *s, uint64_t offset, uint64_t len, tm__advice how)
{
    (void)how;
    const local_file *lf = s->impl;
    fadvise_willneed(lf->fd, offset, len);
    return true;
}

static const tm__source_ops mapped_ops = {.close = close_mapped, .reopen = reopen_file,
                                          .advise = advise_mapped};
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
                            "the input is a stream longer than the limit of %" PRIu64 " bytes (set "
                            "TM_STREAM_LIMIT to read more)",
                            (uint64_t)limit);
        }
    }
    *out = buf;
    *size = len;
    return TM_OK;
}

/* Bytes [off, off + len) of the file (which had size bytes when opened) into buf with pread. */
static tm_status pread_all(int fd, uint8_t *buf, uint64_t off, uint64_t len, uint64_t size,
                           tm_error *err)
{
    for (uint64_t done = 0; done < len;) {
        ssize_t n = pread(fd, buf + done, (size_t)(len - done), (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return io_fail(err, "read failed", errno);
        if (n == 0)
            return tm__fail(err, TM_IO, off + done,
                            "the file shrank while being read: it ends at byte %" PRIu64
                            " of %" PRIu64,
                            (uint64_t)(off + done), (uint64_t)size);
        done += (uint64_t)n;
    }
    return TM_OK;
}

/* A regular file read whole with pread: immune to the file changing afterwards. */
static tm_status read_file(int fd, uint64_t size, uint8_t **out, tm_error *err)
{
    uint8_t *buf = malloc(size ? (size_t)size : 1);
    if (!buf)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET,
                        "out of memory reading a %" PRIu64 "-byte file", (uint64_t)size);
    tm_status st = pread_all(fd, buf, 0, size, size, err);
    if (st != TM_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    return TM_OK;
}

/* ---- a file read as needed -------------------------------------------------------------- */

/* Whether the file is still as it was opened: a read as needed must not mix two versions. */
static tm_status check_unchanged(const tm__source *s, tm_error *err)
{
    const local_file *lf = s->impl;
    struct stat sb;
    if (fstat(lf->fd, &sb) != 0)
        return io_fail(err, "cannot stat", errno);
    if (unchanged(lf, &sb, s->size))
        return TM_OK;
    return tm__fail(err, TM_IO, TM_NO_OFFSET,
                    "the file changed while it was being read (%" PRIu64
                    " bytes when opened, %" PRIu64 " "
                    "now%s); open it again",
                    (uint64_t)s->size, (uint64_t)sb.st_size,
                    (uint64_t)sb.st_size == s->size ? ", written since" : "");
}

static tm_status read_later(const tm__source *s, uint64_t offset, uint64_t len, void *buf,
                            tm_error *err)
{
    const local_file *lf = s->impl;
    tm_status st = pread_all(lf->fd, buf, offset, len, s->size, err);
    tm_status now = check_unchanged(s, err); /* a change says more than a short read */
    return now != TM_OK ? now : st;
}

/* The head grows to at least want bytes, and at least doubles, so that a header walk that
 * starts again at each growth walks a long header a few times, not once per megabyte. */
static tm_status need_later(tm__source *s, uint64_t want, tm_error *err)
{
    const local_file *lf = s->impl;
    uint64_t grown = s->avail < s->size / 2 ? 2 * s->avail : s->size;
    if (grown < want)
        grown = want;
    uint8_t *head = realloc((void *)(uintptr_t)s->base, (size_t)grown);
    if (!head)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET,
                        "out of memory for %" PRIu64 " bytes of header", (uint64_t)grown);
    s->base = head;
    tm_status st = pread_all(lf->fd, head + s->avail, s->avail, grown - s->avail, s->size, err);
    tm_status now = check_unchanged(s, err);
    if (now != TM_OK || st != TM_OK)
        return now != TM_OK ? now : st;
    s->avail = grown;
    return TM_OK;
}

static void close_later(tm__source *s)
{
    const local_file *lf = s->impl;
    close(lf->fd);
    free((void *)(uintptr_t)s->base);
    free(s->impl);
}

static const tm__source_ops later_ops = {.need = need_later, .read = read_later,
                                         .close = close_later, .reopen = reopen_file,
                                         .advise = advise_later};

static local_file *new_local_file(const struct stat *sb, int fd, tm_error *err)
{
    local_file *lf = malloc(sizeof *lf);
    if (lf)
        *lf = (local_file){sb->st_dev, sb->st_ino, sb->st_mtim, fd};
    else
        tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    return lf;
}

/* Keep fd open and read the first HEAD_FIRST bytes; the rest waits until it is asked for. */
static tm_status open_later(tm__source *s, int fd, const struct stat *sb, tm_error *err)
{
    local_file *lf = new_local_file(sb, fd, err);
    const uint64_t first = s->size < HEAD_FIRST ? s->size : HEAD_FIRST;
    uint8_t *head = lf ? malloc((size_t)first) : NULL;
    tm_status st = !lf     ? TM_NOMEM
                   : !head ? tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory")
                           : pread_all(fd, head, 0, first, s->size, err);
    if (st != TM_OK) {
        free(head);
        free(lf);
        return st;
    }
    s->base = head;
    s->avail = first;
    s->impl = lf;
    s->ops = &later_ops;
    return TM_OK;
}

static tm_status map_file(tm__source *s, int fd, const struct stat *sb, tm_error *err)
{
    local_file *lf = new_local_file(sb, -1, err);
    if (!lf)
        return TM_NOMEM;
    void *p = mmap(NULL, (size_t)s->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        free(lf);
        return io_fail(err, "mmap failed", e);
    }
    s->base = p;
    s->impl = lf;
    s->ops = &mapped_ops;
    return TM_OK;
}

tm_status tm__local_open(tm__source *s, const tm__source_opts *o, tm_error *err)
{
    const bool is_stdin = strcmp(s->path, "-") == 0;
    /* standard input is copied even when it is a regular file: the header promises a copy */
    const bool no_mmap = is_stdin || (o->flags & TM_OPEN_NO_MMAP);
    const uint64_t whole = tm__env_bytes("TM_READ_WHOLE_LIMIT", TM_DEFAULT_READ_WHOLE_LIMIT);
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
    } else if (no_mmap && (is_stdin || (uint64_t)sb.st_size <= whole)) {
        s->size = (uint64_t)sb.st_size;
        st = read_file(fd, s->size, &heap, err);
    } else if (no_mmap) {
        s->size = (uint64_t)sb.st_size;
        st = open_later(s, fd, &sb, err);
        if (st == TM_OK)
            return TM_OK; /* the source keeps fd */
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
