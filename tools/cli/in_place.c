/* A file changed in place (edit without -o): two edits of one file at once must not both
 * succeed with one of them silently lost, and an edit must not replace a file that another
 * program put at the path since it was read.
 *
 * So the file is locked (flock, exclusive, not waiting) from before it is opened until the edit
 * is done: a second edit finds it locked and fails at once, saying so, before it reads
 * anything. flock is advisory: a program that does not take it is caught instead at the end,
 * where the new file replaces the path only if the path still names the file that was locked
 * and read (device and inode), checked just before the rename. */
#include "cli_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct cli_in_place {
    int fd;           /* holds the lock */
    dev_t dev;
    ino_t ino;
    const char *path; /* as the user named it */
};

cli_in_place *cli_in_place_begin(const char *path)
{
    cli_in_place *ip = calloc(1, sizeof *ip);
    if (!ip) {
        cli_errorf("out of memory");
        return NULL;
    }
    ip->path = path;
    struct stat st;
    const bool local = strcmp(path, "-") != 0 && !strstr(path, "://") &&
                       strncmp(path, "hf:", 3) != 0 && strncmp(path, "ollama:", 7) != 0;
    ip->fd = local ? open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) : -1; /* a FIFO must not wait */
    if (!local) {
        cli_errorf("%s: only a local file is edited in place: write a copy with -o OUT", path);
    } else if (ip->fd < 0 || fstat(ip->fd, &st) != 0) {
        cli_errorf("%s: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        cli_errorf("%s: not a regular file: only a regular file is edited in place (write a copy "
                   "with -o OUT)", path);
    } else if (flock(ip->fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
        cli_errorf("%s: another process is editing it (the file is locked): nothing was changed; "
                   "edit it again once that edit is done", path);
    } else {
        /* a filesystem without flock (some network ones) is left to the check at the end */
        ip->dev = st.st_dev;
        ip->ino = st.st_ino;
        return ip;
    }
    cli_in_place_end(ip);
    return NULL;
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
    free(ip);
}
