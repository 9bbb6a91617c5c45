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

/* hf.c: hf:OWNER/REPO/FILE[@REVISION] as a URL on HF_ENDPOINT (malloc'd into *url). */
tm_status tm__hf_resolve(const char *spec, char **url, tm_error *err);
/* hf.c: HF_TOKEN's header for HF_ENDPOINT, into *auth with the header line malloc'd into
 * *line; both NULL (and TM_OK) when HF_TOKEN is unset. */
tm_status tm__hf_auth(tm__http_auth *auth, char **line, tm_error *err);

#endif /* TM_IO_SOURCE_H */
