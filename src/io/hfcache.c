/* The Hugging Face hub cache, in the layout huggingface_hub writes and reads:
 *
 *   CACHE/models--OWNER--REPO/refs/REVISION          a commit hash (40 hex digits)
 *   CACHE/models--OWNER--REPO/snapshots/COMMIT/FILE  a relative symlink to ../../blobs/ETAG
 *   CACHE/models--OWNER--REPO/blobs/ETAG             the file's bytes
 *
 * CACHE is $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
 * ~/.cache/huggingface/hub. An hf: name whose file is there is opened as that local file, and
 * download.c writes there. Every name that becomes a path (the owner, the repository, the file,
 * the revision) and every ref file's content come from the user or from disk and are checked
 * before they touch a path: no "..", no absolute file, no ref that is not a commit hash. */
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

bool tm__hf_offline(void)
{
    /* huggingface_hub's reading of a boolean variable */
    const char *v = getenv("HF_HUB_OFFLINE");
    return v && (strcasecmp(v, "1") == 0 || strcasecmp(v, "on") == 0 ||
                 strcasecmp(v, "yes") == 0 || strcasecmp(v, "true") == 0);
}

/* path, or "$var/suffix" when the variable is set, malloc'd into *out. */
static bool from_env(const char *var, const char *suffix, char **out)
{
    const char *v = getenv(var);
    if (!v || !*v)
        return false;
    size_t cap = strlen(v) + strlen(suffix) + 2;
    if ((*out = malloc(cap)) != NULL)
        snprintf(*out, cap, "%s%s%s", v, *suffix ? "/" : "", suffix);
    return true;
}

tm_status tm__hf_cache_dir(char **dir, tm_error *err)
{
    *dir = NULL;
    if (!from_env("HF_HUB_CACHE", "", dir) && !from_env("HF_HOME", "hub", dir) &&
        !from_env("XDG_CACHE_HOME", "huggingface/hub", dir) &&
        !from_env("HOME", ".cache/huggingface/hub", dir))
        return tm__fail(err, TM_NOT_FOUND, TM_NO_OFFSET,
                        "no Hugging Face cache: set HF_HUB_CACHE, HF_HOME or HOME");
    return *dir ? TM_OK : tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
}

bool tm__hf_is_commit(const char *s, size_t n)
{
    if (n != 40)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* An owner or repository name as the Hub allows them: letters, digits, '-', '_', '.', not
 * starting with '.' and without "--" (the cache's separator) or "..". */
static bool repo_part_ok(const char *s, size_t n)
{
    if (n == 0 || n > 96 || s[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        const char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return false;
        if (i > 0 && (c == '-' || c == '.') && s[i - 1] == c)
            return false;
    }
    return true;
}

bool tm__hf_relative_ok(const char *s, size_t n)
{
    if (n == 0 || n > 1024 || s[0] == '/')
        return false;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j] != '/') {
            const unsigned char c = (unsigned char)s[j];
            if (c < 0x20 || c == 0x7f || c == '\\')
                return false;
            j++;
        }
        const size_t len = j - i;
        if (len == 0 || (len == 1 && s[i] == '.') || (len == 2 && s[i] == '.' && s[i + 1] == '.'))
            return false;
        i = j + 1;
        if (j + 1 == n) /* a trailing slash */
            return false;
    }
    return true;
}

tm_status tm__hf_repo_dir(const tm__hf_name *n, char **dir, tm_error *err)
{
    *dir = NULL;
    if (!repo_part_ok(n->owner, n->owner_len) || !repo_part_ok(n->repo, n->repo_len) ||
        !tm__hf_relative_ok(n->file, n->file_len) || !tm__hf_relative_ok(n->rev, n->rev_len))
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "this hf: name cannot name a file in the Hugging Face cache (an owner "
                        "or repository of letters, digits, '-', '_' and '.'; no '.' or '..' "
                        "in the file or revision)");
    char *cache;
    tm_status st = tm__hf_cache_dir(&cache, err);
    if (st != TM_OK)
        return st;
    size_t cap = strlen(cache) + n->owner_len + n->repo_len + 16;
    if ((*dir = malloc(cap)) != NULL)
        snprintf(*dir, cap, "%s/models--%.*s--%.*s", cache, (int)n->owner_len, n->owner,
                 (int)n->repo_len, n->repo);
    free(cache);
    return *dir ? TM_OK : tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
}

/* dir/a/b (b of length n), malloc'd; NULL when out of memory. */
static char *join3(const char *dir, const char *a, const char *b, size_t n)
{
    size_t cap = strlen(dir) + strlen(a) + n + 3;
    char *p = malloc(cap);
    if (p)
        snprintf(p, cap, "%s/%s/%.*s", dir, a, (int)n, b);
    return p;
}

static tm_status bad_ref(const char *ref_path, tm_error *err)
{
    char q[300];
    tm__quote(q, sizeof q, ref_path, strlen(ref_path));
    return tm__fail(err, TM_IO, TM_NO_OFFSET,
                    "the Hugging Face cache's ref file %s does not hold a commit hash (40 "
                    "hex digits); remove it, or download the file again", q);
}

/* The commit refs/REVISION names, into commit[41]; "" when there is no such ref. */
static tm_status read_ref(const char *repo_dir, const tm__hf_name *n, char commit[41],
                          tm_error *err)
{
    commit[0] = '\0';
    char *ref_path = join3(repo_dir, "refs", n->rev, n->rev_len);
    if (!ref_path)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    /* the hub writes 40 digits, perhaps a newline: anything longer is not a ref */
    char buf[64];
    ssize_t got = -1;
    int fd = open(ref_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat sb;
    tm_status st = TM_OK;
    if (fd < 0 && errno != ENOENT && errno != ENOTDIR)
        st = bad_ref(ref_path, err);
    if (fd >= 0) {
        if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode))
            got = read(fd, buf, sizeof buf);
        close(fd);
        while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == '\r'))
            got--;
        if (got == 40 && tm__hf_is_commit(buf, 40))
            memcpy(commit, buf, 40), commit[40] = '\0';
        else
            st = bad_ref(ref_path, err);
    }
    free(ref_path);
    return st;
}

tm_status tm__hf_snapshot_path(const char *repo_dir, const char *commit, const tm__hf_name *n,
                               char **path, tm_error *err)
{
    size_t cap = strlen(repo_dir) + strlen(commit) + n->file_len + 16;
    if ((*path = malloc(cap)) == NULL)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    snprintf(*path, cap, "%s/snapshots/%s/%.*s", repo_dir, commit, (int)n->file_len, n->file);
    return TM_OK;
}

/* What was looked for, for the offline refusal. */
static tm_status not_cached(const char *spec, const char *looked, tm_error *err)
{
    char qs[200], ql[300];
    tm__quote(qs, sizeof qs, spec, strlen(spec));
    tm__quote(ql, sizeof ql, looked, strlen(looked));
    return tm__fail(err, TM_NOT_FOUND, TM_NO_OFFSET,
                    "HF_HUB_OFFLINE is set and %s is not in the Hugging Face cache (looked for "
                    "%s); download it first, or unset HF_HUB_OFFLINE",
                    qs, ql);
}

tm_status tm__hf_cached(const char *spec, char **path, tm_error *err)
{
    *path = NULL;
    tm__hf_name n;
    tm_status st = tm__hf_parse(spec, &n, err);
    char *repo_dir = NULL, *snap = NULL;
    if (st == TM_OK)
        st = tm__hf_repo_dir(&n, &repo_dir, err);
    if (st != TM_OK)
        /* a name that cannot be in the cache may still be on the Hub */
        return tm__hf_offline() ? st : TM_OK;
    char commit[41];
    if (tm__hf_is_commit(n.rev, n.rev_len))
        snprintf(commit, sizeof commit, "%.*s", 40, n.rev);
    else
        st = read_ref(repo_dir, &n, commit, err);
    if (st == TM_OK && !commit[0]) {
        /* no such ref: say where it would have been */
        if (tm__hf_offline()) {
            char *ref_path = join3(repo_dir, "refs", n.rev, n.rev_len);
            st = ref_path ? not_cached(spec, ref_path, err)
                          : tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
            free(ref_path);
        }
    } else if (st == TM_OK) {
        st = tm__hf_snapshot_path(repo_dir, commit, &n, &snap, err);
        struct stat sb;
        if (st == TM_OK && stat(snap, &sb) == 0 && S_ISREG(sb.st_mode)) {
            *path = snap;
            snap = NULL;
        } else if (st == TM_OK && tm__hf_offline()) {
            st = not_cached(spec, snap, err);
        }
    }
    free(snap);
    free(repo_dir);
    return st;
}
