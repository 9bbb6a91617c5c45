/* tm_download: a whole remote file onto the local disk, resumable and checked.
 *
 * The bytes come through http.c (a remote source, read a piece of TM_DOWNLOAD_CHUNK bytes at a
 * time; http.c sends a large read as four ranges at once and checks every answer against the
 * first: size, ETag or Last-Modified). They are written to DEST.incomplete, and after each piece
 * the file is synced and DEST.incomplete.tensormap records what is done:
 *
 *   tensormap download 1
 *   url URL              what is fetched (an hf: name's resolve URL)
 *   size N               the file's bytes
 *   validator V          the ETag (or Last-Modified) the server gave
 *   sha256 HEX|-         what the Hub says the file hashes to
 *   piece N              bytes per piece
 *   done 0110...         one digit per piece, 1 when it is written
 *
 * So the same call after an interruption (a kill -9 included) fetches only the pieces not yet
 * marked, provided the server still has the same file (url, size, validator and sha256 equal);
 * otherwise it starts again. The state file is what makes a DEST.incomplete ours: one without
 * it was not made here and is refused, never truncated. The finished file is checked (its
 * size; the SHA-256 the Hub gives as X-Linked-Etag, by reading it back through libcrypto),
 * then renamed to DEST; a mismatch removes it.
 *
 * An hf: name without a destination goes into the hub cache (hfcache.c) as huggingface_hub
 * writes it: a HEAD on the resolve URL, its redirect not followed, gives X-Repo-Commit and
 * X-Linked-Etag; the file becomes blobs/ETAG, snapshots/COMMIT/FILE a relative symlink to it,
 * and refs/REVISION the commit. */
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef TM_HAVE_CURL

tm_status tm_download(const char *src, const char *dest, const tm_download_opts *opts,
                      tm_download_result *out, tm_error *err)
{
    (void)src, (void)dest, (void)opts, (void)out;
    return tm__fail(err, TM_UNSUPPORTED, TM_NO_OFFSET,
                    "this tensormap was built without libcurl, so it cannot download "
                    "(install libcurl4-openssl-dev and rebuild)");
}

#else /* TM_HAVE_CURL */

#include <openssl/evp.h>

#define DEFAULT_PIECE (16ull << 20)
#define MIN_PIECE (4ull << 10)
/* done holds a byte per piece: 2^26 pieces of 16 MiB are a petabyte */
#define MAX_PIECES (1ull << 26)
#define STATE_MAGIC "tensormap download 1\n"
#define PART_SUFFIX ".incomplete"
#define STATE_SUFFIX ".tensormap"

static tm_status no_memory(tm_error *err)
{
    return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
}

static tm_status sys_fail(tm_error *err, const char *what, const char *path)
{
    const int e = errno;
    char q[300];
    tm__quote(q, sizeof q, path, strlen(path));
    return tm__fail(err, e == ENOENT ? TM_NOT_FOUND : TM_IO, TM_NO_OFFSET, "%s %s: %s", what, q,
                    strerror(e));
}

/* a, then b, malloc'd (NULL when out of memory). */
static char *concat(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *p = malloc(na + nb + 1);
    if (p) {
        memcpy(p, a, na);
        memcpy(p + na, b, nb + 1);
    }
    return p;
}

/* ---- what the Hub says of an hf: file ------------------------------------------------------ */

typedef struct hub_answer {
    char commit[256], linked_etag[256], etag[256], linked_size[256];
} hub_answer;

static size_t on_hub_header(char *p, size_t size, size_t n, void *arg)
{
    hub_answer *h = arg;
    const size_t len = size * n;
    if (!tm__http_header_value(p, len, "x-repo-commit", h->commit, sizeof h->commit) &&
        !tm__http_header_value(p, len, "x-linked-etag", h->linked_etag, sizeof h->linked_etag) &&
        !tm__http_header_value(p, len, "x-linked-size", h->linked_size, sizeof h->linked_size))
        tm__http_header_value(p, len, "etag", h->etag, sizeof h->etag);
    return len;
}

/* HEAD url, its redirect not followed (the Hub's headers are on the resolve answer). */
static tm_status hub_head(const char *url, const char *auth_line, hub_answer *h, tm_error *err)
{
    memset(h, 0, sizeof *h);
    CURL *e = tm__http_easy();
    if (!e)
        return no_memory(err);
    struct curl_slist *headers = auth_line ? curl_slist_append(NULL, auth_line) : NULL;
    char curl_error[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_hub_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, h);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, curl_error);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 120L);
    const CURLcode rc = curl_easy_perform(e);
    long code = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(e);
    curl_slist_free_all(headers);
    char q[300];
    tm__quote(q, sizeof q, url, strlen(url));
    if (rc != CURLE_OK)
        return tm__fail(err, TM_IO, TM_NO_OFFSET, "%s: %s", q,
                        curl_error[0] ? curl_error : curl_easy_strerror(rc));
    if (code == 404 || code == 410)
        return tm__fail(err, TM_NOT_FOUND, TM_NO_OFFSET, "%s: HTTP %ld: no such file on the server",
                        q, code);
    if (code == 401 || code == 403)
        return tm__fail(err, TM_IO, TM_NO_OFFSET,
                        "%s: HTTP %ld: access refused (a gated or private repository needs a "
                        "token with access to it in HF_TOKEN)", q, code);
    if (code < 200 || code >= 400)
        return tm__fail(err, TM_IO, TM_NO_OFFSET, "%s: HTTP %ld", q, code);
    return TM_OK;
}

/* An ETag without W/ and quotes, into out; "" when it cannot name a file (anything but
 * letters, digits, '-', '_' and '.', or longer than 128). */
static void etag_name(const char *etag, char out[129])
{
    const char *p = etag;
    if (strncmp(p, "W/", 2) == 0)
        p += 2;
    size_t n = strlen(p);
    if (n >= 2 && p[0] == '"' && p[n - 1] == '"')
        p++, n -= 2;
    out[0] = '\0';
    if (n == 0 || n > 128 || p[0] == '.')
        return;
    for (size_t i = 0; i < n; i++) {
        const char c = p[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return;
    }
    memcpy(out, p, n);
    out[n] = '\0';
}

/* ---- one download ---------------------------------------------------------------------------- */

typedef struct job {
    const tm_download_opts *opts;
    const char *url;          /* what is fetched */
    bool show_url;            /* messages name it (src was an hf: name) */
    const char *dest;         /* the final path */
    char *part, *state;       /* DEST.incomplete and its state file */
    char sha256[65];          /* what the Hub says, lowercase, or "" */
    uint64_t expect_size;     /* the Hub's X-Linked-Size, or UINT64_MAX */
    tm__source src;
    const char *validator;
    int fd;
    uint64_t piece, n_pieces;
    char *done;               /* '0' or '1' per piece */
    uint64_t fetched;
    bool sha256_checked;
} job;

static tm_status save_state(const job *j, tm_error *err)
{
    tm_outfile *o;
    tm_status st = tm_outfile_open(&o, j->state, err);
    if (st != TM_OK)
        return st;
    FILE *f = fdopen(dup(tm_outfile_fd(o)), "w");
    bool ok = f && fprintf(f,
                           STATE_MAGIC "url %s\nsize %" PRIu64 "\nvalidator %s\nsha256 %s\n"
                                       "piece %" PRIu64 "\ndone %s\n",
                           j->url, (uint64_t)j->src.size, j->validator,
                           j->sha256[0] ? j->sha256 : "-", (uint64_t)j->piece, j->done) > 0;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok) {
        tm_outfile_abort(o);
        return sys_fail(err, "cannot write", j->state);
    }
    return tm_outfile_commit(o, err);
}

/* The value of "key VALUE\n" at *p (advanced past it), NUL-terminated in place; NULL when the
 * line is another. */
static char *state_line(char **p, const char *key)
{
    const size_t n = strlen(key);
    if (strncmp(*p, key, n) != 0 || (*p)[n] != ' ')
        return NULL;
    char *v = *p + n + 1, *nl = strchr(v, '\n');
    if (!nl)
        return NULL;
    *nl = '\0';
    *p = nl + 1;
    return v;
}

enum state_kind { STATE_NONE, STATE_RESUME, STATE_STALE };

/* Whether the state file is there, ours, and of this very file (then j->done and j->piece are
 * its). One that is there but not ours (no magic line) is refused. */
static tm_status load_state(job *j, enum state_kind *kind, tm_error *err)
{
    *kind = STATE_NONE;
    int fd = open(j->state, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno == ENOENT ? TM_OK : sys_fail(err, "cannot read", j->state);
    struct stat sb;
    const uint64_t cap = MAX_PIECES + 64 + 2 * strlen(j->url) + 4096;
    char *text = NULL;
    ssize_t got = -1;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size < cap &&
        (text = malloc((size_t)sb.st_size + 1)) != NULL)
        got = pread(fd, text, (size_t)sb.st_size, 0);
    close(fd);
    if (got < 0 || strncmp(text, STATE_MAGIC, strlen(STATE_MAGIC)) != 0 || got != sb.st_size) {
        free(text);
        char q[300];
        tm__quote(q, sizeof q, j->state, strlen(j->state));
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "%s is not a tensormap download's state; it is not ours to replace "
                        "(remove it, or download to another path)", q);
    }
    text[got] = '\0';
    *kind = STATE_STALE;
    char *p = text + strlen(STATE_MAGIC), *url, *size, *validator, *sha, *piece, *done;
    char want_size[32];
    snprintf(want_size, sizeof want_size, "%" PRIu64, (uint64_t)j->src.size);
    uint64_t n_piece = 0;
    if ((url = state_line(&p, "url")) && (size = state_line(&p, "size")) &&
        (validator = state_line(&p, "validator")) && (sha = state_line(&p, "sha256")) &&
        (piece = state_line(&p, "piece")) && (done = state_line(&p, "done")) &&
        strcmp(url, j->url) == 0 && strcmp(size, want_size) == 0 && j->validator[0] &&
        strcmp(validator, j->validator) == 0 &&
        strcmp(sha, j->sha256[0] ? j->sha256 : "-") == 0 &&
        sscanf(piece, "%" SCNu64, &n_piece) == 1 && n_piece >= MIN_PIECE &&
        (j->src.size + n_piece - 1) / n_piece == strlen(done) &&
        strspn(done, "01") == strlen(done)) {
        j->piece = n_piece;
        j->n_pieces = strlen(done);
        free(j->done);
        if ((j->done = concat(done, "")) == NULL) {
            free(text);
            return no_memory(err);
        }
        *kind = STATE_RESUME;
    }
    free(text);
    return TM_OK;
}

/* The part file, opened for writing: the one of a state that matches (resumed), or a new one,
 * its state written first so that it is known for ours. */
static tm_status open_part(job *j, tm_error *err)
{
    enum state_kind kind;
    tm_status st = load_state(j, &kind, err);
    if (st != TM_OK)
        return st;
    if (kind == STATE_RESUME && (j->fd = open(j->part, O_RDWR | O_CLOEXEC | O_NOFOLLOW)) >= 0)
        return TM_OK;
    memset(j->done, '0', (size_t)j->n_pieces);
    if (kind == STATE_NONE) {
        struct stat sb;
        if (lstat(j->part, &sb) == 0) {
            char q[300];
            tm__quote(q, sizeof q, j->part, strlen(j->part));
            return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                            "%s is there without a tensormap download's state, so it was not "
                            "made here and is not ours to replace (remove it, or download to "
                            "another path)", q);
        }
    }
    if ((st = save_state(j, err)) != TM_OK)
        return st;
    /* the state says it is ours: a part of a stale state starts again from nothing */
    const int flags = kind == STATE_NONE ? O_EXCL : O_TRUNC;
    j->fd = open(j->part, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | flags, 0644);
    if (j->fd < 0) {
        st = sys_fail(err, "cannot create", j->part);
        if (kind == STATE_NONE)
            unlink(j->state);
    }
    return st;
}

static tm_status write_all(const job *j, const uint8_t *p, uint64_t len, uint64_t off,
                           tm_error *err)
{
    while (len > 0) {
        ssize_t n = pwrite(j->fd, p, (size_t)len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return sys_fail(err, "cannot write", j->part);
        p += n;
        off += (uint64_t)n;
        len -= (uint64_t)n;
    }
    return TM_OK;
}

/* Every piece not yet done: fetched (or taken from the head the open read), written, synced,
 * recorded. */
static tm_status fetch_pieces(job *j, tm_error *err)
{
    uint8_t *buf = malloc((size_t)j->piece);
    if (!buf)
        return no_memory(err);
    uint64_t in_place = 0;
    for (uint64_t i = 0; i < j->n_pieces; i++)
        if (j->done[i] == '1')
            in_place += i + 1 < j->n_pieces ? j->piece : j->src.size - i * j->piece;
    tm_status st = TM_OK;
    for (uint64_t i = 0; i < j->n_pieces && st == TM_OK; i++) {
        if (j->done[i] == '1')
            continue;
        const uint64_t off = i * j->piece;
        const uint64_t len = i + 1 < j->n_pieces ? j->piece : j->src.size - off;
        const uint8_t *bytes = j->src.base + off;
        if (off + len > j->src.avail) {
            st = tm__source_read(&j->src, off, len, buf, err);
            bytes = buf;
        }
        if (st == TM_OK)
            st = write_all(j, bytes, len, off, err);
        if (st == TM_OK && fdatasync(j->fd) != 0)
            st = sys_fail(err, "cannot sync", j->part);
        if (st == TM_OK) {
            j->done[i] = '1';
            st = save_state(j, err);
        }
        in_place += len;
        if (st == TM_OK && j->opts && j->opts->progress)
            j->opts->progress(in_place, j->src.size, j->opts->ctx);
    }
    free(buf);
    return st;
}

/* The part's SHA-256, read back, in lowercase hex. */
static tm_status part_sha256(const job *j, char hex[65], tm_error *err)
{
    enum { BLOCK = 1 << 20 };
    uint8_t *buf = malloc(BLOCK);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    tm_status st = buf && md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) ? TM_OK
                                                                           : no_memory(err);
    for (uint64_t off = 0; st == TM_OK && off < j->src.size;) {
        const uint64_t want = j->src.size - off < BLOCK ? j->src.size - off : BLOCK;
        ssize_t n = pread(j->fd, buf, (size_t)want, (off_t)off);
        if (n <= 0)
            st = n < 0 ? sys_fail(err, "cannot read", j->part)
                       : tm__fail(err, TM_IO, TM_NO_OFFSET, "the partial file shrank");
        else if (!EVP_DigestUpdate(md, buf, (size_t)n))
            st = no_memory(err);
        off += n > 0 ? (uint64_t)n : 0;
    }
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    if (st == TM_OK && !EVP_DigestFinal_ex(md, d, &n))
        st = no_memory(err);
    for (unsigned i = 0; st == TM_OK && i < n && i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    EVP_MD_CTX_free(md);
    free(buf);
    return st;
}

/* The whole part checked, renamed to dest, its directory synced, the state removed. */
static tm_status finish(job *j, tm_error *err)
{
    struct stat sb;
    if (fsync(j->fd) != 0 || fstat(j->fd, &sb) != 0)
        return sys_fail(err, "cannot sync", j->part);
    if ((uint64_t)sb.st_size != j->src.size)
        return tm__fail(err, TM_IO, TM_NO_OFFSET,
                        "the partial file holds %" PRIu64 " bytes of the %" PRIu64 " expected",
                        (uint64_t)sb.st_size, (uint64_t)j->src.size);
    if (j->sha256[0]) {
        char got[65] = "";
        tm_status st = part_sha256(j, got, err);
        if (st != TM_OK)
            return st;
        if (strcmp(got, j->sha256) != 0) {
            unlink(j->part);
            unlink(j->state);
            return tm__fail(err, TM_BAD_VALUE, TM_NO_OFFSET,
                            "the file's SHA-256 is %s, not %s as the Hub says (X-Linked-Etag); "
                            "what was downloaded is removed",
                            got, j->sha256);
        }
        j->sha256_checked = true;
    }
    if (rename(j->part, j->dest) != 0)
        return sys_fail(err, "cannot rename into place:", j->dest);
    unlink(j->state);
    const char *slash = strrchr(j->dest, '/');
    char *dir = slash ? strndup(j->dest, slash == j->dest ? 1 : (size_t)(slash - j->dest))
                      : concat(".", "");
    int dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0) {
        fsync(dfd); /* the rename survives a crash; a directory that cannot sync keeps it */
        close(dfd);
    }
    free(dir);
    return TM_OK;
}

/* Download j->url into j->dest. */
static tm_status run(job *j, tm_error *err)
{
    struct stat sb;
    if (lstat(j->dest, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        char q[300];
        tm__quote(q, sizeof q, j->dest, strlen(j->dest));
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "%s is not a regular file: download to another path", q);
    }
    if (!(j->part = concat(j->dest, PART_SUFFIX)) ||
        !(j->state = concat(j->part, STATE_SUFFIX)) || !(j->src.path = concat(j->url, "")))
        return no_memory(err);
    /* a download walks no header: its first request only has to say the size and version, so
     * it asks for the least http.c asks of a file (as for one of a set of many) */
    tm__head_budget budget = {0, UINT32_MAX};
    tm__http_auth auth;
    char *origin_line = NULL;
    tm_status st = tm__hf_auth(&auth, &origin_line, err);
    if (st == TM_OK)
        st = tm__http_open(&j->src, j->url, j->show_url, origin_line ? &auth : NULL, &budget,
                           err);
    free(origin_line);
    if (st != TM_OK) {
        free(j->src.path);
        memset(&j->src, 0, sizeof j->src);
        return st;
    }
    j->validator = tm__http_validator(&j->src);
    if (!tm__http_reads_ranges(&j->src)) {
        char q[300] = "";
        if (j->show_url)
            tm__quote(q, sizeof q, j->url, strlen(j->url));
        return tm__fail(err, TM_UNSUPPORTED, TM_NO_OFFSET,
                        "%s%sthe server ignores Range requests (it answered the first one with "
                        "the whole file), and download fetches by ranges, to resume and to fetch "
                        "four at once: nothing was written; a whole-file client (curl -o) can "
                        "fetch it", q, q[0] ? ": " : "");
    }
    if (j->expect_size != UINT64_MAX && j->expect_size != j->src.size)
        return tm__fail(err, TM_IO, TM_NO_OFFSET,
                        "the Hub says the file is %" PRIu64 " bytes (X-Linked-Size), the "
                        "server sends %" PRIu64, (uint64_t)j->expect_size, (uint64_t)j->src.size);
    j->piece = tm__env_bytes("TM_DOWNLOAD_CHUNK", DEFAULT_PIECE);
    if (j->piece < MIN_PIECE)
        j->piece = MIN_PIECE;
    j->n_pieces = (j->src.size + j->piece - 1) / j->piece;
    if (j->n_pieces > MAX_PIECES)
        return tm__fail(err, TM_LIMIT, TM_NO_OFFSET,
                        "a %" PRIu64 "-byte file is more than %" PRIu64 " pieces of "
                        "TM_DOWNLOAD_CHUNK (%" PRIu64 " bytes): raise it",
                        (uint64_t)j->src.size, (uint64_t)MAX_PIECES, (uint64_t)j->piece);
    if (!(j->done = calloc((size_t)j->n_pieces + 1, 1)))
        return no_memory(err);
    st = open_part(j, err);
    if (st == TM_OK)
        st = fetch_pieces(j, err);
    if (st == TM_OK)
        st = finish(j, err);
    uint64_t requests;
    tm__source_fetched(&j->src, &j->fetched, &requests);
    return st;
}

static void job_free(job *j)
{
    if (j->fd >= 0)
        close(j->fd);
    if (j->src.ops)
        tm__source_close(&j->src);
    free(j->part);
    free(j->state);
    free(j->done);
}

/* ---- into the hub cache ---------------------------------------------------------------------- */

/* Every directory above path made (as mkdir -p does). */
static tm_status make_dirs(char *path, tm_error *err)
{
    for (char *p = path + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        const bool ok = mkdir(path, 0777) == 0 || errno == EEXIST;
        if (!ok) {
            tm_status st = sys_fail(err, "cannot make the directory", path);
            *p = '/';
            return st;
        }
        *p = '/';
    }
    return TM_OK;
}

/* snapshots/COMMIT/FILE, a symlink to ../../blobs/ETAG (one more ../ per directory of FILE),
 * made beside it and renamed over it. */
static tm_status link_snapshot(char *snap, const tm__hf_name *n, const char *etag,
                               tm_error *err)
{
    tm_status st = make_dirs(snap, err);
    if (st != TM_OK)
        return st;
    size_t depth = 0;
    for (size_t i = 0; i < n->file_len; i++)
        depth += n->file[i] == '/';
    char *target = malloc(3 * depth + strlen(etag) + 16), *o = target;
    char tmp[TM_DOWNLOAD_PATH_MAX + 32];
    if (!target)
        return no_memory(err);
    for (size_t i = 0; i < depth + 2; i++)
        o += sprintf(o, "../");
    sprintf(o, "blobs/%s", etag);
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", snap, (long)getpid());
    unlink(tmp); /* a link of ours that an earlier run left */
    if (symlink(target, tmp) != 0 || rename(tmp, snap) != 0) {
        st = sys_fail(err, "cannot link", snap);
        unlink(tmp);
    }
    free(target);
    return st;
}

/* refs/REVISION, holding commit (as the hub writes it: no newline). */
static tm_status write_ref(const char *repo_dir, const tm__hf_name *n, const char *commit,
                           tm_error *err)
{
    size_t cap = strlen(repo_dir) + n->rev_len + 8;
    char *path = malloc(cap);
    if (!path)
        return no_memory(err);
    snprintf(path, cap, "%s/refs/%.*s", repo_dir, (int)n->rev_len, n->rev);
    tm_outfile *o = NULL;
    tm_status st = make_dirs(path, err);
    if (st == TM_OK)
        st = tm_outfile_open(&o, path, err);
    if (st == TM_OK) {
        if (write(tm_outfile_fd(o), commit, 40) == 40) {
            st = tm_outfile_commit(o, err);
        } else {
            st = sys_fail(err, "cannot write", path);
            tm_outfile_abort(o);
        }
    }
    free(path);
    return st;
}

/* A header value as the message quotes it. */
static const char *quoted(char *buf, size_t cap, const char *s)
{
    tm__quote(buf, cap, s, strlen(s));
    return buf;
}

static tm_status download_hf(const char *src, const char *dest, job *j, tm_download_result *res,
                             tm_error *err)
{
    tm__hf_name n;
    char *url = NULL, *repo_dir = NULL, *blob = NULL, *snap = NULL, *auth_line = NULL;
    tm__http_auth auth;
    tm_status st = tm__hf_parse(src, &n, err);
    if (st == TM_OK && !dest)
        st = tm__hf_repo_dir(&n, &repo_dir, err);
    if (st == TM_OK && tm__hf_offline()) {
        /* nothing may be fetched: what the cache has is the answer */
        char *cached = NULL;
        st = tm__hf_cached(src, &cached, err);
        if (st == TM_OK && (dest || !cached))
            st = tm__fail(err, TM_NOT_FOUND, TM_NO_OFFSET,
                          "HF_HUB_OFFLINE is set: nothing can be downloaded%s",
                          cached ? " (the file is in the cache: open it by its hf: name)" : "");
        if (st == TM_OK)
            snprintf(res->path, sizeof res->path, "%s", cached);
        free(cached);
        free(repo_dir);
        return st;
    }
    if (st == TM_OK)
        st = tm__hf_resolve(src, &url, err);
    if (st == TM_OK)
        st = tm__hf_auth(&auth, &auth_line, err);
    hub_answer h;
    if (st == TM_OK)
        st = hub_head(url, auth_line, &h, err);
    char etag[129] = "", q[300];
    if (st == TM_OK) {
        etag_name(h.linked_etag[0] ? h.linked_etag : h.etag, etag);
        if (h.linked_etag[0] && strlen(etag) == 64 && strspn(etag, "0123456789abcdef") == 64)
            memcpy(j->sha256, etag, 65);
        char *end;
        unsigned long long size = strtoull(h.linked_size, &end, 10);
        if (h.linked_size[0] && *end == '\0')
            j->expect_size = size;
    }
    if (st == TM_OK && !dest) {
        const char *commit = h.commit;
        if (!commit[0] && tm__hf_is_commit(n.rev, n.rev_len))
            commit = n.rev;
        if (!tm__hf_is_commit(commit, strlen(commit)))
            st = tm__fail(err, TM_IO, TM_NO_OFFSET,
                          "the Hub's answer has no commit hash (X-Repo-Commit %s), so the file "
                          "cannot be put in the cache: download it with -o PATH",
                          h.commit[0] ? quoted(q, sizeof q, h.commit) : "missing");
        else if (!etag[0])
            st = tm__fail(err, TM_IO, TM_NO_OFFSET,
                          "the Hub's answer has no ETag that can name a file in the cache (%s): "
                          "download it with -o PATH",
                          quoted(q, sizeof q, h.linked_etag[0] ? h.linked_etag : h.etag));
        char blob_rel[160];
        snprintf(blob_rel, sizeof blob_rel, "/blobs/%s", etag);
        if (st == TM_OK && !(blob = concat(repo_dir, blob_rel)))
            st = no_memory(err);
        if (st == TM_OK)
            st = tm__hf_snapshot_path(repo_dir, commit, &n, &snap, err);
        if (st == TM_OK && strlen(snap) >= sizeof res->path)
            st = tm__fail(err, TM_LIMIT, TM_NO_OFFSET, "the cache path is too long");
        if (st == TM_OK)
            st = make_dirs(blob, err);
        struct stat sb;
        if (st == TM_OK && stat(blob, &sb) != 0) {
            j->url = url;
            j->show_url = true;
            j->dest = blob;
            st = run(j, err);
        }
        if (st == TM_OK)
            st = link_snapshot(snap, &n, etag, err);
        if (st == TM_OK && !tm__hf_is_commit(n.rev, n.rev_len))
            st = write_ref(repo_dir, &n, commit, err);
        if (st == TM_OK)
            snprintf(res->path, sizeof res->path, "%s", snap);
    } else if (st == TM_OK) {
        j->url = url;
        j->show_url = true;
        j->dest = dest;
        st = run(j, err);
    }
    free(url);
    free(repo_dir);
    free(blob);
    free(snap);
    free(auth_line);
    return st;
}

tm_status tm_download(const char *src, const char *dest, const tm_download_opts *opts,
                      tm_download_result *out, tm_error *err)
{
    tm_download_result res;
    memset(&res, 0, sizeof res);
    const bool hf = src && strncmp(src, "hf:", 3) == 0;
    if (!src || (!dest && !hf))
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "tm_download needs a source, and a destination unless it is an hf: name");
    if (opts && opts->struct_size < sizeof *opts)
        opts = NULL; /* an older caller's: its fields are not ours to read */
    if (dest && strlen(dest) >= sizeof res.path)
        return tm__fail(err, TM_LIMIT, TM_NO_OFFSET, "the destination path is too long");
    job j = {.opts = opts, .fd = -1, .expect_size = UINT64_MAX};
    tm_status st;
    if (hf) {
        st = download_hf(src, dest, &j, &res, err);
    } else if (!tm__is_url(src)) {
        st = tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                      "tm_download takes a URL (http://, https://) or an hf: name");
    } else {
        j.url = src;
        j.dest = dest;
        st = run(&j, err);
    }
    if (st == TM_OK && dest)
        snprintf(res.path, sizeof res.path, "%s", dest);
    struct stat sb;
    res.size = st == TM_OK && stat(res.path, &sb) == 0 ? (uint64_t)sb.st_size : j.src.size;
    res.fetched = j.fetched;
    res.sha256_checked = st == TM_OK && j.sha256_checked;
    job_free(&j);
    if (out)
        *out = res;
    return st;
}

#endif /* TM_HAVE_CURL */
