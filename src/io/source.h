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
};

/* Each opener is given s with path set (source.c owns it) and sets everything else. On
 * failure it releases what it took and leaves ops NULL. */

/* local.c: a path or "-" (standard input). */
tm_status tm__local_open(tm__source *s, const tm__source_opts *o, tm_error *err);
/* local.c: a caller's buffer, borrowed. */
void tm__local_borrow(tm__source *s, const void *buf, uint64_t len);

/* http.c: the URL at s->path. Messages start with that URL when show_url (the caller names
 * the path it was given, which for hf: is not the URL). auth, when not NULL, is a request
 * header and the URL of the server it is for. The head's bytes count into budget (NULL: the
 * file's own). */
typedef struct tm__http_auth {
    const char *header; /* "Authorization: Bearer ..." */
    const char *origin; /* sent only to requests for this URL's scheme, host and port */
} tm__http_auth;
tm_status tm__http_open(tm__source *s, bool show_url, const tm__http_auth *auth,
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

#endif /* TM_IO_SOURCE_H */
