/* The one way the library (and the tool, through the public tm_outfile_* calls) writes a file:
 * whole or not at all, and never at the expense of what the path named before.
 *
 * A regular-file destination is written as a new temporary file beside it (same directory, so
 * the rename stays on one filesystem; O_EXCL, so it is always a file this process created),
 * fsynced, renamed over the destination, and the directory fsynced so the rename survives a
 * crash. On failure only that temporary file is removed. The destination is never opened for
 * writing, truncated or unlinked: until the rename it is untouched, and after it a process that
 * still maps the old file keeps the old inode. A character device or FIFO (/dev/null, a pipe to
 * another program) cannot be replaced and is not ours to remove: it is opened and written
 * directly, without O_TRUNC. A symlink on the way is followed, unless another user may have
 * planted it (check_links). */
#include "../common/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct tm_outfile {
    int fd;
    char *name; /* the path as given, for messages */
    char *dest; /* the file the rename replaces (a symlink's target), or the device */
    char *temp; /* NULL when writing directly */
};

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* The directory part of path ("." when there is none); malloc'ed. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return dup_str(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = '\0';
    }
    return d;
}

/* Create "DIR/.NAME.tmp-PID-N" exclusively; the name is tried again on a collision. */
static int create_temp(const char *dest, char **temp)
{
    static unsigned counter;
    const char *slash = strrchr(dest, '/');
    const char *base = slash ? slash + 1 : dest;
    const int dir_len = slash ? (int)(slash - dest) + 1 : 0;
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned n = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED) ^
                     (unsigned)(attempt ? time(NULL) * 2654435761u : 0);
        char *p = NULL;
        if (asprintf(&p, "%.*s.%s.tmp-%ld-%u", dir_len, dest, base, (long)getpid(), n) < 0)
            return errno = ENOMEM, -1;
        /* 0666 less the umask, as any new file; permissions of an old file are copied later */
        int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            *temp = p;
            return fd;
        }
        int e = errno;
        free(p);
        if (e != EEXIST)
            return errno = e, -1;
    }
    return errno = EEXIST, -1;
}

/* The first len bytes of s, as a string; malloc'ed. */
static char *prefix_of(const char *s, size_t len)
{
    char *p = malloc(len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

/* The kernel's rule for following a symlink (fs.protected_symlinks), applied to every link the
 * output path passes through, whatever the sysctl says: in a sticky world-writable directory
 * (/tmp), a link is followed only when it belongs to the caller or to the directory's owner.
 * Another user's link there could name a file of ours, and the rename would replace it. The
 * path is walked component by component; each link found is checked, then replaced by its
 * target, and the walk starts again (at most 40 links, as the kernel allows). */
static tm_status check_links(const char *path, tm_error *err)
{
    char *cur = dup_str(path), *link = NULL; /* link: the prefix of cur that is a symlink */
    tm_status s = cur ? TM_OK : tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    for (int hops = 0; s == TM_OK && hops <= 40; hops++) {
        size_t at = 0, n = strlen(cur);
        struct stat ls, ds;
        bool found = false, exists = true;
        while (!found && exists && at < n) {
            while (at < n && cur[at] == '/')
                at++;
            while (at < n && cur[at] != '/')
                at++;
            free(link);
            if (!(link = prefix_of(cur, at))) {
                s = tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
                break;
            }
            exists = lstat(link, &ls) == 0; /* past a missing part, nothing is followed */
            found = exists && S_ISLNK(ls.st_mode);
        }
        if (!found || s != TM_OK)
            break;
        char *dir = dir_of(link), target[PATH_MAX], *next = NULL;
        const ssize_t k = readlink(link, target, sizeof target - 1);
        if (!dir || k < 0 || stat(dir, &ds) != 0) {
            s = tm__fail(err, TM_IO, TM_NO_OFFSET, "%s: %s", path, strerror(errno));
        } else if ((ds.st_mode & S_ISVTX) && (ds.st_mode & S_IWOTH) &&
                   ls.st_uid != geteuid() && ls.st_uid != ds.st_uid) {
            s = tm__fail(err, TM_IO, TM_NO_OFFSET,
                         "%s: %s is a symlink owned by another user (uid %u) in the sticky "
                         "world-writable directory %s: not following it, since anyone may have "
                         "planted it there (the kernel's fs.protected_symlinks rule); write to a "
                         "path of your own", path, link, (unsigned)ls.st_uid, dir);
        } else {
            /* the target, relative to the link's directory, then the rest of the path */
            target[k] = '\0';
            const bool absolute = target[0] == '/';
            if (asprintf(&next, "%s%s%s%s", absolute ? "" : dir, absolute ? "" : "/", target,
                         cur + at) < 0)
                next = NULL;
            free(cur);
            if (!(cur = next))
                s = tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
        }
        free(dir);
    }
    free(link);
    free(cur);
    return s;
}

tm_status tm_outfile_open(tm_outfile **out, const char *path, tm_error *err)
{
    if (!out || !path || !*path)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tm_outfile_open: %s is NULL",
                        out ? "the path" : "out");
    *out = NULL;
    if (tm__is_url(path))
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "%s: is read as a URL, and outputs are local files only (write ./%s for "
                        "a local file of that name)", path, path);
    tm_status links = check_links(path, err);
    if (links != TM_OK)
        return links;
    tm_outfile *o = calloc(1, sizeof *o);
    if (!o)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory opening %s", path);
    o->fd = -1;
    if (!(o->name = dup_str(path))) {
        free(o);
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory opening %s", path);
    }
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (!exists && errno != ENOENT) {
        tm_status s = tm__fail(err, TM_IO, TM_NO_OFFSET, "%s: %s", path, strerror(errno));
        free(o);
        return s;
    }
    /* A symlink stays a symlink: the file it names is the one replaced (check_links has
     * refused one that another user may have planted). */
    o->dest = exists ? realpath(path, NULL) : dup_str(path);
    if (!o->dest) {
        tm_status s = tm__fail(err, errno == ENOMEM ? TM_NOMEM : TM_IO, TM_NO_OFFSET, "%s: %s",
                               path, strerror(errno));
        free(o->name);
        free(o);
        return s;
    }
    tm_status s = TM_OK;
    if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        o->fd = open(o->dest, O_WRONLY | O_CLOEXEC);
        if (o->fd < 0)
            s = tm__fail(err, TM_IO, TM_NO_OFFSET, "%s: %s", path, strerror(errno));
    } else if (exists && !S_ISREG(st.st_mode)) {
        s = tm__fail(err, TM_IO, TM_NO_OFFSET,
                     "%s: not a regular file, character device or FIFO; not writing there",
                     path);
    } else {
        o->fd = create_temp(o->dest, &o->temp);
        if (o->fd < 0)
            s = tm__fail(err, TM_IO, TM_NO_OFFSET,
                         "%s: cannot create a temporary file beside it: %s", path,
                         strerror(errno));
        else if (exists)
            (void)fchmod(o->fd, st.st_mode & 07777); /* best effort: a replaced file keeps its
                                                      * permissions when we may set them */
    }
    if (s != TM_OK) {
        free(o->dest);
        free(o->name);
        free(o);
        return s;
    }
    *out = o;
    return TM_OK;
}

int tm_outfile_fd(const tm_outfile *o) { return o ? o->fd : -1; }

const char *tm_outfile_temp_path(const tm_outfile *o) { return o ? o->temp : NULL; }

const char *tm__outfile_name(const tm_outfile *o) { return o->name; }

static void release(tm_outfile *o)
{
    free(o->name);
    free(o->dest);
    free(o->temp);
    free(o);
}

void tm_outfile_abort(tm_outfile *o)
{
    if (!o)
        return;
    if (o->fd >= 0)
        close(o->fd);
    if (o->temp)
        unlink(o->temp); /* ours, created with O_EXCL: never the destination */
    release(o);
}

/* fsync the directory holding path, so that a rename in it is on disk. */
static bool sync_dir(const char *path)
{
    char *dir = dir_of(path);
    if (!dir)
        return false;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0)
        return false;
    bool ok = fsync(fd) == 0 || errno == EINVAL; /* some filesystems cannot sync a directory */
    close(fd);
    return ok;
}

tm_status tm_outfile_commit(tm_outfile *o, tm_error *err)
{
    if (!o)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tm_outfile_commit: NULL");
    tm_status s = TM_OK;
    if (!o->temp) {
        if (close(o->fd) != 0)
            s = tm__fail(err, TM_IO, TM_NO_OFFSET, "%s: %s", o->dest, strerror(errno));
        o->fd = -1;
        release(o);
        return s;
    }
    if (fsync(o->fd) != 0)
        s = tm__fail(err, TM_IO, TM_NO_OFFSET, "%s: writing it to disk: %s", o->dest,
                     strerror(errno));
    int fd = o->fd;
    o->fd = -1;
    if (close(fd) != 0 && s == TM_OK)
        s = tm__fail(err, TM_IO, TM_NO_OFFSET, "%s: %s", o->dest, strerror(errno));
    if (s == TM_OK && rename(o->temp, o->dest) != 0)
        s = tm__fail(err, TM_IO, TM_NO_OFFSET, "%s: cannot rename the finished file into place: %s",
                     o->dest, strerror(errno));
    if (s != TM_OK) {
        tm_outfile_abort(o);
        return s;
    }
    if (!sync_dir(o->dest))
        s = tm__fail(err, TM_IO, TM_NO_OFFSET, "%s: written, but its directory could not be "
                     "synced: %s", o->dest, strerror(errno));
    release(o);
    return s;
}
