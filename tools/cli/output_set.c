/* Outputs of several files that are one thing (export --max-shard-size: shards and an index;
 * split: the shards of a set) are put in place together, never file by file: a re-export cut
 * short must not leave a checkpoint that opens half one model and half the other.
 *
 * Each file is written whole under a hidden staging name beside its final one (through
 * cli_output_*, so it is itself a temporary file until complete, and both are removed if a
 * signal ends the process). Only when every file is complete are they renamed into place, the
 * entry (the index, the first shard) last, with the terminating signals held. If a staged file
 * replaces a file of the same name, the old entry is moved aside first: until the new entry is
 * in place the set then does not open at all, rather than open mixed.
 *
 * Files named as the set's are (STEM-NNNNN-of-NNNNN SUFFIX in its directory) but not part of the
 * new set would be left beside it, looking like part of it. Those that belong to the output being
 * replaced (the old index names them: cli_output_set_replaces) are ours to remove, once the new
 * set is in place. Any other is not ours: the set is refused before anything is written,
 * naming it. Nothing else is ever removed. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct member {
    char *path;  /* the final name */
    char *stage; /* the hidden name it is written as */
    int guard;   /* cli_signal_guard's slot for stage */
    bool placed; /* renamed to path */
} member;

struct cli_output_set {
    char *dir, *stem, *suffix;
    member *members;
    size_t n, cap;
    char **replaced; /* names (in dir) of the output being replaced, removed after the commit */
    size_t n_replaced;
};

cli_output_set *cli_output_set_new(const char *dir, const char *stem, const char *suffix)
{
    cli_output_set *s = calloc(1, sizeof *s);
    if (s && (!(s->dir = strdup(dir)) || !(s->stem = strdup(stem)) ||
              !(s->suffix = strdup(suffix)))) {
        cli_output_set_finish(s, CLI_FAIL, NULL);
        s = NULL;
    }
    if (!s)
        cli_errorf("out of memory");
    return s;
}

static bool five_digits(const char *p)
{
    for (int i = 0; i < 5; i++)
        if (p[i] < '0' || p[i] > '9')
            return false;
    return true;
}

/* name (in the set's directory) is named as the set's files are: STEM-NNNNN-of-NNNNN SUFFIX. */
static bool named_like(const cli_output_set *s, const char *name)
{
    const size_t stem = strlen(s->stem), suffix = strlen(s->suffix), n = strlen(name);
    if (n != stem + 15 + suffix || strncmp(name, s->stem, stem) != 0 ||
        strcmp(name + n - suffix, s->suffix) != 0)
        return false;
    const char *p = name + stem;
    return p[0] == '-' && five_digits(p + 1) && memcmp(p + 6, "-of-", 4) == 0 &&
           five_digits(p + 10);
}

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

void cli_output_set_replaces(cli_output_set *s, const char *name)
{
    if (!named_like(s, name)) /* only a name of the set's kind, in its directory */
        return;
    char **r = realloc(s->replaced, (s->n_replaced + 1) * sizeof *r);
    if (!r)
        return;
    s->replaced = r;
    if ((r[s->n_replaced] = strdup(name)))
        s->n_replaced++;
}

const char *cli_output_set_add(cli_output_set *s, const char *path)
{
    struct stat st;
    if (!cli_output_allowed(path))
        return NULL;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        cli_errorf("%s: not a regular file; a file of a set of files is replaced as a file, not "
                   "through a link or into a device: remove it or write the set elsewhere", path);
        return NULL;
    }
    if (s->n == s->cap) {
        const size_t cap = s->cap ? s->cap * 2 : 16;
        member *m = realloc(s->members, cap * sizeof *m);
        if (!m) {
            cli_errorf("out of memory");
            return NULL;
        }
        s->members = m;
        s->cap = cap;
    }
    member *m = &s->members[s->n];
    *m = (member){strdup(path), NULL, -1, false};
    const char *base = base_of(path);
    const int dir_len = (int)(base - path);
    /* a hidden name of our own: one that does not exist yet */
    for (unsigned k = 0; m->path && !m->stage && k < 100; k++) {
        if (asprintf(&m->stage, "%.*s.%s.staged-%ld-%u", dir_len, path, base, (long)getpid(),
                     k) < 0) {
            m->stage = NULL;
            break;
        }
        if (lstat(m->stage, &st) == 0 || errno != ENOENT) {
            free(m->stage);
            m->stage = NULL;
        }
    }
    if (!m->path || !m->stage) {
        cli_errorf("%s: no name to write it under beside it", path);
        free(m->path);
        free(m->stage);
        return NULL;
    }
    m->guard = cli_signal_guard(m->stage); /* from before it exists: removed if a signal ends us */
    s->n++;
    return m->stage;
}

static bool in_set(const cli_output_set *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(base_of(s->members[i].path), name) == 0)
            return true;
    return false;
}

static bool is_replaced(const cli_output_set *s, const char *name)
{
    for (size_t i = 0; i < s->n_replaced; i++)
        if (strcmp(s->replaced[i], name) == 0)
            return true;
    return false;
}

bool cli_output_set_ready(const cli_output_set *s)
{
    DIR *d = opendir(s->dir);
    if (!d)
        return true; /* nothing there yet */
    size_t foreign = 0;
    char first[512] = "";
    for (struct dirent *e; (e = readdir(d));)
        if (named_like(s, e->d_name) && !in_set(s, e->d_name) && !is_replaced(s, e->d_name) &&
            (foreign++ == 0 || strcmp(e->d_name, first) < 0))
            snprintf(first, sizeof first, "%s", e->d_name); /* the first by name, to be named */
    closedir(d);
    if (foreign)
        cli_errorf("%s: holds %s%s, named as the new files are but not one of them, nor of the "
                   "output being replaced: it would be left beside them, looking like part of "
                   "them; remove %s, or write elsewhere", s->dir, first,
                   foreign > 1 ? " and others" : "", foreign > 1 ? "them" : "it");
    return foreign == 0;
}

static bool sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    bool ok = fd >= 0 && (fsync(fd) == 0 || errno == EINVAL);
    if (fd >= 0)
        close(fd);
    return ok;
}

/* Every staged file renamed to its final name, entry (a member's final path) last. When a staged
 * file replaces an old one, the old entry is first moved aside (to a hidden name): from then on
 * the old set does not open, so it is never read mixed with the new; it comes back if nothing
 * was replaced yet when a rename fails, and is removed otherwise. Then the old output's files
 * that the new set does not name are removed. CLI_OK, or CLI_FAIL after a message. */
static int commit(cli_output_set *s, const char *entry)
{
    bool replaces = false;
    struct stat st;
    for (size_t i = 0; i < s->n; i++)
        replaces |= (!entry || strcmp(s->members[i].path, entry) != 0) &&
                    lstat(s->members[i].path, &st) == 0;
    char *aside = NULL;
    if (replaces && entry && lstat(entry, &st) == 0) {
        const char *base = base_of(entry);
        if (asprintf(&aside, "%.*s.%s.replaced-%ld", (int)(base - entry), entry, base,
                     (long)getpid()) < 0 || rename(entry, aside) != 0) {
            cli_errorf("%s: cannot move the old one aside: %s (nothing was changed)", entry,
                       strerror(errno));
            free(aside);
            return CLI_FAIL;
        }
    }
    size_t placed = 0;
    int rc = CLI_OK;
    for (int last = 0; last < 2 && rc == CLI_OK; last++)
        for (size_t i = 0; i < s->n && rc == CLI_OK; i++) {
            member *m = &s->members[i];
            if ((entry && strcmp(m->path, entry) == 0) != (last == 1))
                continue;
            if (rename(m->stage, m->path) != 0) {
                const bool none = placed == 0 && (!aside || rename(aside, entry) == 0);
                cli_errorf("%s: cannot rename it into place: %s; %s", m->path, strerror(errno),
                           none ? "nothing was changed"
                                : "the set is only partly in place and does not open");
                rc = CLI_FAIL;
                if (none) {
                    free(aside);
                    aside = NULL;
                }
            } else {
                m->placed = true;
                placed++;
            }
        }
    if (aside)
        unlink(aside); /* the old entry: of no use once a file of the new set replaced one */
    free(aside);
    for (size_t i = 0; rc == CLI_OK && i < s->n_replaced; i++) {
        char *old = NULL;
        if (!in_set(s, s->replaced[i]) &&
            asprintf(&old, "%s/%s", s->dir, s->replaced[i]) >= 0 && lstat(old, &st) == 0 &&
            S_ISREG(st.st_mode))
            unlink(old); /* a file of the output replaced, which the new one does not name */
        free(old);
    }
    if (rc == CLI_OK && !sync_dir(s->dir)) {
        cli_errorf("%s: the files are in place, but the directory could not be synced: %s",
                   s->dir, strerror(errno));
        rc = CLI_FAIL;
    }
    return rc;
}

int cli_output_set_finish(cli_output_set *s, int rc, const char *entry)
{
    if (!s)
        return rc;
    sigset_t saved;
    cli_signals_hold(&saved); /* the renames are not cut half-way by a signal */
    if (rc == CLI_OK)
        rc = commit(s, entry);
    for (size_t i = 0; i < s->n; i++) {
        member *m = &s->members[i];
        if (!m->placed) /* not renamed into place: ours, and of no use now */
            unlink(m->stage);
        cli_signal_forget(m->guard);
        free(m->path);
        free(m->stage);
    }
    cli_signals_release(&saved);
    for (size_t i = 0; i < s->n_replaced; i++)
        free(s->replaced[i]);
    free(s->replaced);
    free(s->members);
    free(s->dir);
    free(s->stem);
    free(s->suffix);
    free(s);
    return rc;
}
