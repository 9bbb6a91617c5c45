/* One file's bytes, whatever holds them: the one place that knows which backend a path goes to
 * (local.c for a path or "-", http.c for a URL, with hf.c resolving hf: names and their
 * token, and hfcache.c finding them in the Hugging Face cache first; s3.c s3:// names and
 * their credentials), and the calls the rest of the library makes on any source, through the
 * backend's table. */
#include "source.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

bool tm__is_url(const char *path)
{
    return strncasecmp(path, "http://", 7) == 0 || strncasecmp(path, "https://", 8) == 0 ||
           strncmp(path, "hf:", 3) == 0 || strncmp(path, "s3://", 5) == 0;
}

/* s->path is a URL: HF_TOKEN goes along to its endpoint. */
static tm_status open_url(tm__source *s, bool show_url, tm__head_budget *budget, tm_error *err)
{
    tm__http_auth auth;
    char *line = NULL;
    tm_status st = tm__hf_auth(&auth, &line, err);
    if (st == TM_OK)
        st = tm__http_open(s, s->path, show_url, line ? &auth : NULL, budget, err);
    free(line);
    return st;
}

/* s->path is s3://BUCKET/KEY: signed with its credentials (when there are any) for its
 * endpoint. It keeps its s3:// name, so that a shard beside it is an s3:// name too. */
static tm_status open_s3(tm__source *s, tm__head_budget *budget, tm_error *err)
{
    tm__s3 s3;
    tm_status st = tm__s3_resolve(s->path, &s3, err);
    if (st != TM_OK)
        return st;
    char *token_line = NULL;
    if (s3.token && asprintf(&token_line, "x-amz-security-token: %s", s3.token) < 0) {
        tm__s3_free(&s3);
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    }
    const tm__http_auth auth = {.origin = s3.url, .header = token_line,
                                .sigv4 = s3.key ? s3.sigv4 : NULL, .key = s3.key,
                                .secret = s3.secret, .no_redirects = true,
                                .explain = tm__s3_explain, .explain_arg = s3.credentials};
    st = tm__http_open(s, s3.url, true, &auth, budget, err);
    free(token_line);
    tm__s3_free(&s3);
    return st;
}

tm_status tm__source_open(tm__source *s, const char *path, const tm__source_opts *o,
                          tm_error *err)
{
    memset(s, 0, sizeof *s);
    tm_status st;
    if (strncmp(path, "hf:", 3) == 0) {
        /* a file in the hub cache is opened there, where its shards are its siblings in the
         * snapshot; else it is known by the URL it resolves to, its shards beside it there */
        st = tm__hf_cached(path, &s->path, err);
        if (st == TM_OK && s->path)
            st = tm__local_open(s, o, err);
        else if (st == TM_OK && (st = tm__hf_resolve(path, &s->path, err)) == TM_OK)
            st = open_url(s, true, o->budget, err);
    } else if (!(s->path = strdup(path))) {
        st = tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    } else if (strncmp(path, "s3://", 5) == 0) {
        st = open_s3(s, o->budget, err);
    } else {
        st = tm__is_url(path) ? open_url(s, false, o->budget, err) : tm__local_open(s, o, err);
    }
    if (st != TM_OK) {
        free(s->path);
        memset(s, 0, sizeof *s);
    }
    return st;
}

void tm__source_buffer(tm__source *s, const void *buf, uint64_t len)
{
    memset(s, 0, sizeof *s);
    tm__local_borrow(s, buf, len);
}

tm_status tm__source_need(tm__source *s, uint64_t end, tm_error *err)
{
    if (end <= s->avail || s->avail >= s->size)
        return TM_OK;
    return s->ops->need(s, end < s->size ? end : s->size, err);
}

tm_status tm__source_read(const tm__source *s, uint64_t offset, uint64_t len, void *buf,
                          tm_error *err)
{
    uint64_t end;
    if (!tm__add_u64(offset, len, &end) || end > s->size)
        return tm__fail(err, TM_INVALID_ARG, offset,
                        "bytes [%" PRIu64 ", +%" PRIu64 ") are outside the %" PRIu64 "-byte file",
                        (uint64_t)offset, (uint64_t)len, (uint64_t)s->size);
    if (end <= s->avail) {
        if (len)
            memcpy(buf, s->base + offset, (size_t)len);
        return TM_OK;
    }
    return s->ops->read(s, offset, len, buf, err);
}

const uint8_t *tm__source_view(const tm__source *s, uint64_t offset, uint64_t len)
{
    uint64_t end;
    if (s->ops->read || !tm__add_u64(offset, len, &end) || end > s->size)
        return NULL;
    return s->base + offset;
}

bool tm__source_is_remote(const tm__source *s) { return s->ops && s->ops->fetched; }

void tm__source_fetched(const tm__source *s, uint64_t *bytes, uint64_t *requests)
{
    *bytes = *requests = 0;
    if (tm__source_is_remote(s))
        s->ops->fetched(s, bytes, requests);
}

int tm__source_reopen(const tm__source *s)
{
    return s->ops && s->ops->reopen ? s->ops->reopen(s) : -1;
}

bool tm__source_advise(const tm__source *s, uint64_t offset, uint64_t len, tm__advice how)
{
    uint64_t end;
    if (!s->ops || !s->ops->advise || !tm__add_u64(offset, len, &end) || end > s->size)
        return false;
    return s->ops->advise(s, offset, len, how);
}

void tm__source_close(tm__source *s)
{
    if (s->ops)
        s->ops->close(s);
    free(s->path);
    memset(s, 0, sizeof *s);
}
