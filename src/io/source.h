/* What src/io/source.c shares with the backends behind it: the table of a backend's functions,
 * and how each one opens. The rest of the library sees only tm__source and the tm__source_*
 * calls (common/internal.h). source.c is the only file that names a backend; a backend calls
 * neither another backend nor source.c. */
#ifndef TM_IO_SOURCE_H
#define TM_IO_SOURCE_H

#include "../common/internal.h"

struct tm__source_ops {
    /* Make at least want bytes (avail < want <= size) available at base; base may move. NULL
     * for a backend that holds the whole file. */
    tm_status (*need)(tm__source *s, uint64_t want, tm_error *err);
    /* Copy bytes [offset, offset + len) of the file (inside size, past avail) into buf. NULL
     * for a backend that holds the whole file: its ranges are viewed in place instead. */
    tm_status (*read)(const tm__source *s, uint64_t offset, uint64_t len, void *buf,
                      tm_error *err);
    /* Release what the backend holds (path is source.c's). */
    void (*close)(tm__source *s);
    /* Body bytes and requests fetched over the network so far. NULL for a local file, which
     * is how tm__source_is_remote tells the two apart. */
    void (*fetched)(const tm__source *s, uint64_t *bytes, uint64_t *requests);
    /* A new descriptor of path while it is still the file opened (tm__source_reopen); NULL
     * when the backend has no file to compare with. */
    int (*reopen)(const tm__source *s);
    /* Ask the kernel to read bytes [offset, offset + len) in ahead (tm__source_advise); NULL
     * for a backend with nothing to ask for. */
    bool (*advise)(const tm__source *s, uint64_t offset, uint64_t len, tm__advice how);
};

/* Each opener is given s with path set (source.c owns it) and sets everything else. On
 * failure it releases what it took and leaves ops NULL. */

/* local.c: a path or "-" (standard input). */
tm_status tm__local_open(tm__source *s, const tm__source_opts *o, tm_error *err);
/* local.c: a caller's buffer, borrowed. */
void tm__local_borrow(tm__source *s, const void *buf, uint64_t len);

/* http.c: the file at url (s->path is what the caller named: a sibling is found beside it).
 * Messages start with url when show_url (the caller names the path it was given, which for
 * hf: and s3: is not the URL). auth, when not NULL, says how requests to one server are
 * authenticated and how its refusals read. The head's bytes count into budget (NULL: the
 * file's own). */
typedef struct tm__http_auth {
    const char *origin;     /* auth goes only to requests for this URL's scheme, host and port */
    const char *header;     /* a request header ("Authorization: Bearer ..."), or NULL */
    /* Signature V4 (libcurl's CURLOPT_AWS_SIGV4): the provider ("aws:amz:REGION:s3") and the
     * key pair, or all NULL */
    const char *sigv4, *key, *secret;
    bool no_redirects;      /* a redirect is an answer (a signed request is not re-signed) */
    /* A refusal in the server's words (its status, its error body) into out; false when it has
     * none. explain_arg (copied) is passed along. */
    bool (*explain)(const char *explain_arg, long code, const uint8_t *body, size_t len,
                    char *out, size_t cap);
    const char *explain_arg;
} tm__http_auth;
tm_status tm__http_open(tm__source *s, const char *url, bool show_url, const tm__http_auth *auth,
                        tm__head_budget *budget, tm_error *err);

#ifdef TM_HAVE_CURL
#include <curl/curl.h>
/* http.c, for download.c: a handle with the settings of every request (redirects, timeouts,
 * the CA bundle, the user agent), libcurl started; NULL when out of memory. */
CURL *tm__http_easy(void);
/* http.c: a response header's value (after "name:"), trimmed, into out; false when line is
 * another header. */
bool tm__http_header_value(const char *line, size_t len, const char *name, char *out,
                           size_t cap);
/* http.c: whether the server answers Range requests (or sent the whole file at once). */
bool tm__http_reads_ranges(const tm__source *s);
/* http.c: what identifies the version of the file an open remote source read: its ETag, else
 * its Last-Modified, else "". */
const char *tm__http_validator(const tm__source *s);
#endif

/* hf.c: the parts of hf:OWNER/REPO/FILE[@REVISION] (pointers into the spec; rev "main" when
 * none is given). Checks the shape only: hfcache.c checks what may name a path. */
typedef struct tm__hf_name {
    const char *owner, *repo, *file, *rev;
    size_t owner_len, repo_len, file_len, rev_len;
} tm__hf_name;
tm_status tm__hf_parse(const char *spec, tm__hf_name *n, tm_error *err);
/* hf.c: hf:OWNER/REPO/FILE[@REVISION] as a URL on HF_ENDPOINT (malloc'd into *url). */
tm_status tm__hf_resolve(const char *spec, char **url, tm_error *err);
/* hf.c: HF_TOKEN's header for HF_ENDPOINT, into *auth with the header line malloc'd into
 * *line; both NULL (and TM_OK) when HF_TOKEN is unset. */
tm_status tm__hf_auth(tm__http_auth *auth, char **line, tm_error *err);

/* hfcache.c: the Hugging Face hub cache (its layout is described there). */
/* Whether HF_HUB_OFFLINE says never to use the network ("1", "on", "yes", "true"). */
bool tm__hf_offline(void);
/* The cache directory, malloc'd. */
tm_status tm__hf_cache_dir(char **dir, tm_error *err);
/* s[0..n) is a commit hash: 40 lowercase hex digits. */
bool tm__hf_is_commit(const char *s, size_t n);
/* s[0..n) is a relative path that stays where it is put: components neither empty, "." nor
 * "..", no control bytes or backslash. */
bool tm__hf_relative_ok(const char *s, size_t n);
/* CACHE/models--OWNER--REPO for n, malloc'd; TM_INVALID_ARG when a part of n cannot be a
 * path there. */
tm_status tm__hf_repo_dir(const tm__hf_name *n, char **dir, tm_error *err);
/* REPO_DIR/snapshots/COMMIT/FILE, malloc'd. */
tm_status tm__hf_snapshot_path(const char *repo_dir, const char *commit, const tm__hf_name *n,
                               char **path, tm_error *err);
/* The cached file an hf: spec names (malloc'd into *path), or *path NULL when it is not cached
 * (TM_OK: ask the Hub). Under HF_HUB_OFFLINE a file not cached is TM_NOT_FOUND, naming where
 * it was looked for; a ref file that holds no commit hash is TM_IO. */
tm_status tm__hf_cached(const char *spec, char **path, tm_error *err);

/* hf.c: bytes [s, s + n) percent-encoded at o (3 * n bytes at most), '/' kept when
 * keep_slash; returns the end. */
char *tm__percent_encode(char *o, const char *s, size_t n, bool keep_slash);

/* s3.c: what s3://BUCKET/KEY resolves to. */
typedef struct tm__s3 {
    char *url;           /* where the object is */
    char *sigv4;         /* "aws:amz:REGION:s3" */
    char *key, *secret;  /* the key pair, both NULL when none is set (unsigned requests) */
    char *token;         /* AWS_SESSION_TOKEN or the profile's, or NULL */
    char *credentials;   /* where the key pair came from, for messages (never the secret) */
    char *region;        /* the profile's region, when it set the region */
} tm__s3;
/* s3.c: spec ("s3://...") resolved with the environment's and the profile's settings into
 * *out (tm__s3_free releases it, on failure too). */
tm_status tm__s3_resolve(const char *spec, tm__s3 *out, tm_error *err);
void tm__s3_free(tm__s3 *s3);
/* s3.c: an S3 refusal (tm__http_auth.explain), naming what to check; credentials is
 * tm__s3.credentials. */
bool tm__s3_explain(const char *credentials, long code, const uint8_t *body, size_t len,
                    char *out, size_t cap);

#endif /* TM_IO_SOURCE_H */
