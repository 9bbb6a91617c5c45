/* A file changed in place (edit without -o).
 *
 * One edit at a time: two edits of one file at once must not both succeed with one of them
 * silently lost, and an edit must not replace a file that another program put at the path since
 * it was read. So the file is locked (flock, exclusive, not waiting) from before it is opened
 * until the edit is done: a second edit finds it locked and fails at once, saying so, before it
 * reads anything. flock is advisory: a program that does not take it is caught instead at the
 * end, where the new file replaces the path only if the path still names the file that was
 * locked and read (device and inode), checked just before the rename.
 *
 * A header that keeps its size is rewritten where it lies instead of copying the whole file (a
 * 4.7 GB model took 29 s and twice its size on disk to change one scalar): only the bytes that
 * differ are written. Safely, against a crash or a kill at any moment, with a rollback journal
 * beside the file (.NAME.tm-journal), in this order:
 *   1. the journal is written (the file's identity, the range, the range's old bytes, and a
 *      checksum over all of it), synced, and its directory synced;
 *   2. the new bytes are written over the range and the file is synced;
 *   3. the file is opened again by the reader and the range read back;
 *   4. the journal is removed and the directory synced: the edit is done.
 * Terminating signals wait during 1-4 (and a signal that arrived meanwhile undoes the edit
 * before it ends the process); a failure at any step puts the old bytes back and removes the
 * journal. If the process dies between 1 and 4 the journal stays, and the next tensormap
 * command to open the file (cli_in_place_recover, from cli_open, under the same lock) puts the
 * old bytes back: a complete journal means the range may be half-written, and an incomplete one
 * (a bad checksum) means the file was not touched yet, since the journal is synced first. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct cli_in_place {
    int fd;           /* holds the lock */
    dev_t dev;
    ino_t ino;
    uint64_t size;    /* when locked */
    const char *path; /* as the user named it */
    char *journal;    /* beside the file itself (a symlink's target) */
};

/* ---- the journal ------------------------------------------------------------------------- */

static const char journal_magic[8] = {'T', 'M', 'J', 'R', 'N', 'L', '0', '1'};
enum { JOURNAL_HEAD = 48 }; /* magic, then u64 dev, ino, file size, offset, length */

/* DIR/.NAME.tm-journal for the file path names (through any symlink); malloc'ed, or NULL. */
static char *journal_path(const char *path)
{
    char *real = realpath(path, NULL), *j = NULL;
    const char *slash = real ? strrchr(real, '/') : NULL;
    if (slash && asprintf(&j, "%.*s/.%s.tm-journal", (int)(slash - real), real, slash + 1) < 0)
        j = NULL;
    free(real);
    return j;
}

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3u;
    return h;
}

static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); } /* read back on this machine */
static uint64_t get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static bool pwrite_all(int fd, const uint8_t *p, size_t n, uint64_t at)
{
    while (n > 0) {
        ssize_t k = pwrite(fd, p, n, (off_t)at);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        p += k, n -= (size_t)k, at += (uint64_t)k;
    }
    return true;
}

static bool sync_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    free(dir);
    bool ok = fd >= 0 && (fsync(fd) == 0 || errno == EINVAL);
    if (fd >= 0)
        close(fd);
    return ok;
}

/* Remove the journal and make that last: after it, the edit (or the rollback) stands. */
static bool drop_journal(const char *journal)
{
    return unlink(journal) == 0 && sync_dir_of(journal);
}

/* The journal for old bytes [at, at + n) of the file (dev, ino, size), written and synced. */
static bool write_journal(const cli_in_place *ip, const uint8_t *old, size_t n, uint64_t at)
{
    const size_t len = JOURNAL_HEAD + n + 8;
    uint8_t *j = malloc(len);
    int fd = j ? open(ip->journal, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
    bool ok = fd >= 0;
    if (ok) {
        memcpy(j, journal_magic, 8);
        put64(j + 8, (uint64_t)ip->dev);
        put64(j + 16, (uint64_t)ip->ino);
        put64(j + 24, ip->size);
        put64(j + 32, at);
        put64(j + 40, n);
        memcpy(j + JOURNAL_HEAD, old, n);
        put64(j + JOURNAL_HEAD + n, fnv1a(j, JOURNAL_HEAD + n));
        ok = pwrite_all(fd, j, len, 0) && fsync(fd) == 0;
    }
    if (fd >= 0 && close(fd) != 0)
        ok = false;
    if (fd >= 0 && !(ok = ok && sync_dir_of(ip->journal)))
        unlink(ip->journal);
    free(j);
    return ok;
}

/* A journal left by an edit that did not finish: the old bytes go back into the file (fd, open
 * for writing or -1 to open it), the journal goes. Says what it did on stderr; false when the
 * file could not be restored (the journal then stays, for the next try). */
static bool roll_back(const cli_in_place *ip)
{
    int jfd = open(ip->journal, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (jfd < 0)
        return errno == ENOENT;
    struct stat js;
    uint8_t *j = NULL;
    size_t len = 0;
    /* bounded by the file: the range lies in it */
    bool read_ok = fstat(jfd, &js) == 0 && S_ISREG(js.st_mode) &&
                   (uint64_t)js.st_size <= JOURNAL_HEAD + 8 + ip->size &&
                   (j = malloc((size_t)js.st_size + 1)) &&
                   pread(jfd, j, (size_t)js.st_size, 0) == js.st_size;
    close(jfd);
    if (read_ok)
        len = (size_t)js.st_size;
    /* a journal cut short still opens with (part of) the magic: an empty one is ours too */
    const bool ours = read_ok && memcmp(j, journal_magic, len < 8 ? len : 8) == 0;
    const bool complete = ours && len >= JOURNAL_HEAD + 8 &&
                          get64(j + 40) == len - JOURNAL_HEAD - 8 &&
                          get64(j + len - 8) == fnv1a(j, len - 8);
    bool ok;
    if (!ours) {
        cli_errorf("%s: %s is not a journal this tool wrote; left as it is (remove it if %s reads "
                   "well)", ip->path, ip->journal, ip->path);
        ok = false;
    } else if (!complete) {
        /* cut short: it was being written, and the file is touched only after it is synced */
        ok = drop_journal(ip->journal);
    } else if (get64(j + 8) != (uint64_t)ip->dev || get64(j + 16) != (uint64_t)ip->ino ||
               get64(j + 24) != ip->size || get64(j + 32) > ip->size - get64(j + 40)) {
        cli_errorf("%s: %s is the journal of an interrupted edit of another file of this name "
                   "(replaced since); left as it is (remove it if %s reads well)", ip->path,
                   ip->journal, ip->path);
        ok = false;
    } else {
        const int fd = open(ip->path, O_WRONLY | O_CLOEXEC);
        struct stat st;
        ok = fd >= 0 && fstat(fd, &st) == 0 && st.st_ino == ip->ino && st.st_dev == ip->dev &&
             pwrite_all(fd, j + JOURNAL_HEAD, (size_t)get64(j + 40), get64(j + 32)) &&
             fsync(fd) == 0;
        if (fd >= 0)
            close(fd);
        if (ok && (ok = drop_journal(ip->journal)))
            cli_errorf("%s: an in-place edit was interrupted; its %" PRIu64 " bytes at byte %"
                       PRIu64 " are back as they were before it", ip->path, get64(j + 40),
                       get64(j + 32));
        else
            cli_errorf("%s: an in-place edit was interrupted and its header could not be put "
                       "back (%s); run tensormap on it again as someone who may write it",
                       ip->path, strerror(errno));
    }
    free(j);
    return ok;
}

/* ---- the lock ---------------------------------------------------------------------------- */

/* Open and lock path. NULL with *why (an errno, or EWOULDBLOCK when another holds the lock). */
static cli_in_place *lock(const char *path, int *why)
{
    cli_in_place *ip = calloc(1, sizeof *ip);
    struct stat st;
    *why = ENOMEM;
    if (ip)
        ip->fd = -1;
    if (!ip || !(ip->journal = journal_path(path))) {
        *why = ip ? errno : ENOMEM;
        cli_in_place_end(ip);
        return NULL;
    }
    ip->path = path;
    ip->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* NONBLOCK: a FIFO must not wait */
    if (ip->fd < 0 || fstat(ip->fd, &st) != 0) {
        *why = errno;
    } else if (!S_ISREG(st.st_mode)) {
        *why = EINVAL;
    } else if (flock(ip->fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
        *why = EWOULDBLOCK;
    } else {
        /* a filesystem without flock (some network ones) is left to the check at the end */
        ip->dev = st.st_dev;
        ip->ino = st.st_ino;
        ip->size = (uint64_t)st.st_size;
        return ip;
    }
    cli_in_place_end(ip);
    return NULL;
}

cli_in_place *cli_in_place_begin(const char *path)
{
    const bool local = strcmp(path, "-") != 0 && !strstr(path, "://") &&
                       strncmp(path, "hf:", 3) != 0 && strncmp(path, "ollama:", 7) != 0;
    int why = 0;
    cli_in_place *ip = local ? lock(path, &why) : NULL;
    if (!local)
        cli_errorf("%s: only a local file is edited in place: write a copy with -o OUT", path);
    else if (!ip && why == EWOULDBLOCK)
        cli_errorf("%s: another process is editing it (the file is locked): nothing was changed; "
                   "edit it again once that edit is done", path);
    else if (!ip && why == EINVAL)
        cli_errorf("%s: not a regular file: only a regular file is edited in place (write a copy "
                   "with -o OUT)", path);
    else if (!ip)
        cli_errorf("%s: %s", path, strerror(why));
    else if (!roll_back(ip)) { /* an edit that died is undone before this one reads the file */
        cli_in_place_end(ip);
        ip = NULL;
    }
    return ip;
}

void cli_in_place_recover(const char *path)
{
    char *journal = journal_path(path);
    struct stat st;
    const bool left = journal && lstat(journal, &st) == 0;
    free(journal);
    int why;
    cli_in_place *ip = left ? lock(path, &why) : NULL; /* a running edit holds it: not ours */
    if (ip)
        roll_back(ip);
    cli_in_place_end(ip);
}

bool cli_in_place_still(const cli_in_place *ip, tm_error *err)
{
    struct stat st;
    if (stat(ip->path, &st) == 0 && st.st_dev == ip->dev && st.st_ino == ip->ino)
        return true;
    err->code = TM_IO;
    err->offset = TM_NO_OFFSET;
    snprintf(err->message, sizeof err->message, "another program replaced the file while it was "
             "being edited: the edit is not written (edit the new file again)");
    return false;
}

tm_status cli_in_place_check(void *ctx, const char *written, tm_error *err)
{
    (void)written;
    return cli_in_place_still(ctx, err) ? TM_OK : err->code;
}

void cli_in_place_end(cli_in_place *ip)
{
    if (!ip)
        return;
    if (ip->fd >= 0)
        close(ip->fd); /* and the lock with it */
    free(ip->journal);
    free(ip);
}

/* ---- the header rewritten in place ------------------------------------------------------- */

__attribute__((format(printf, 2, 3))) static tm_status fail(tm_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err->code = TM_IO;
    err->offset = TM_NO_OFFSET;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return TM_IO;
}

/* Steps 2 and 3: the new bytes [at, at + n) written, synced, read back, and the file opened by
 * the reader. */
static tm_status patch(const cli_in_place *ip, int fd, const uint8_t *new_bytes, size_t n,
                       uint64_t at, uint64_t header, tm_error *err)
{
    if (!pwrite_all(fd, new_bytes + at, n, at) || fsync(fd) != 0)
        return fail(err, "rewriting the header in place: %s", strerror(errno));
    uint8_t *back = malloc(n ? n : 1);
    const bool same = back && pread(fd, back, n, (off_t)at) == (ssize_t)n &&
                      memcmp(back, new_bytes + at, n) == 0;
    free(back);
    if (!same)
        return fail(err, "the header rewritten in place does not read back");
    tm_file *f = NULL;
    tm_error inner = {0};
    if (tm_open(ip->path, TM_OPEN_ONE_SHARD, &f, &inner) != TM_OK)
        return fail(err, "the header rewritten in place does not read back: %s", inner.message);
    const bool whole = tm_file_layout(f)->infos_end == header;
    tm_close(f);
    if (!whole)
        return fail(err, "the header rewritten in place reads back with another size");
    if (cli_signal_pending())
        return fail(err, "interrupted by a signal");
    return TM_OK;
}

tm_status cli_in_place_patch(cli_in_place *ip, tm_writer *w, uint64_t *at, uint64_t *n,
                             tm_error *err)
{
    const uint64_t header = tm_writer_header_bytes(w);
    uint8_t *new_bytes = header <= SIZE_MAX ? malloc((size_t)header) : NULL;
    uint8_t *old = header <= SIZE_MAX ? malloc((size_t)header) : NULL;
    tm_status st = new_bytes && old ? tm_writer_header(w, new_bytes, header, err)
                                    : fail(err, "out of memory for the header");
    tm_writer_free(w);
    const int fd = st == TM_OK ? open(ip->path, O_RDWR | O_CLOEXEC) : -1;
    struct stat sb;
    if (st == TM_OK && (fd < 0 || fstat(fd, &sb) != 0))
        st = fail(err, "opening it to rewrite its header: %s", strerror(errno));
    else if (st == TM_OK && (sb.st_dev != ip->dev || sb.st_ino != ip->ino ||
                             (uint64_t)sb.st_size != ip->size || header > ip->size))
        st = fail(err, "another program replaced or resized the file while it was being edited: "
                  "the edit is not written");
    else if (st == TM_OK && pread(fd, old, (size_t)header, 0) != (ssize_t)header)
        st = fail(err, "reading its header: %s", strerror(errno));
    /* the bytes that differ, [first, last) */
    uint64_t first = 0, last = header;
    while (st == TM_OK && first < header && old[first] == new_bytes[first])
        first++;
    while (st == TM_OK && last > first && old[last - 1] == new_bytes[last - 1])
        last--;
    *at = first;
    *n = st == TM_OK ? last - first : 0;
    if (st == TM_OK && *n > 0) {
        sigset_t saved;
        cli_signals_hold(&saved);
        if (!write_journal(ip, old + first, (size_t)*n, first)) {
            st = fail(err, "writing the journal of the edit beside it: %s", strerror(errno));
        } else if ((st = patch(ip, fd, new_bytes, (size_t)*n, first, header, err)) != TM_OK ||
                   !drop_journal(ip->journal)) {
            /* put the old bytes back and drop the journal; if that fails, the journal stays for
             * the next command that opens the file */
            if (st == TM_OK)
                st = fail(err, "removing the journal of the edit: %s", strerror(errno));
            if (pwrite_all(fd, old + first, (size_t)*n, first) && fsync(fd) == 0)
                drop_journal(ip->journal);
        }
        cli_signals_release(&saved);
    }
    if (fd >= 0)
        close(fd);
    free(new_bytes);
    free(old);
    return st;
}
