/* A remote file: the bytes of a file on a web server, read with HTTP range requests through
 * libcurl. The head (the first TM_HTTP_CHUNK bytes, then as far as the header walk needs) is
 * kept in memory for the walkers; tensor bytes are fetched into the caller's buffer, in several
 * ranges at once for large reads. Every response is checked against the first one (size, ETag
 * or Last-Modified), so a file replaced on the server is refused rather than mixed. */
#include "../common/internal.h"

#include <stdlib.h>
#include <strings.h>

bool tm__is_url(const char *path)
{
    return strncasecmp(path, "http://", 7) == 0 || strncasecmp(path, "https://", 8) == 0 ||
           strncmp(path, "hf:", 3) == 0;
}

#ifndef TM_HAVE_CURL

bool tm_remote_supported(void) { return false; }

tm_status tm__remote_open(tm__map *m, const char *url, tm__head_budget *budget, tm_error *err)
{
    (void)m, (void)url, (void)budget;
    return tm__fail(err, TM_UNSUPPORTED, TM_NO_OFFSET,
                    "this tensormap was built without libcurl, so it cannot read URLs "
                    "(install libcurl4-openssl-dev and rebuild)");
}

/* Unreachable without a remote map; defined so that map.c needs no #ifdef. */
tm_status tm__remote_need(tm__map *m, uint64_t end, tm_error *err)
{
    (void)m, (void)end;
    return tm__fail(err, TM_UNSUPPORTED, TM_NO_OFFSET, "built without libcurl");
}

tm_status tm__remote_read(const tm__map *m, uint64_t offset, uint64_t len, void *buf,
                          tm_error *err)
{
    (void)m, (void)offset, (void)len, (void)buf;
    return tm__fail(err, TM_UNSUPPORTED, TM_NO_OFFSET, "built without libcurl");
}

void tm__remote_close(tm__map *m) { (void)m; }

void tm__remote_fetched(const tm__map *m, uint64_t *bytes, uint64_t *requests)
{
    (void)m;
    *bytes = *requests = 0;
}

#else /* TM_HAVE_CURL */

#include <curl/curl.h>
#include <pthread.h>
#include <time.h>

#define DEFAULT_CHUNK (2ull << 20)
#define MIN_CHUNK (4ull << 10)
#define DEFAULT_HEAD_LIMIT (256ull << 20)
#define DEFAULT_HF_ENDPOINT "https://huggingface.co"
/* Reads of at least 2 x PIECE_MIN bytes go out as up to PARALLEL ranges at once. */
#define PARALLEL 4
#define PIECE_MIN (4ull << 20)
/* Attempts for a transient failure (connection errors, HTTP 429 and 5xx), 0.25 s apart,
 * doubling. */
#define ATTEMPTS 4

struct tm__remote {
    char *shown;                 /* "URL: " for an hf: path (the URL it resolved to), else "":
                                  * what messages start with (the caller names the path) */
    char *target;                /* where range requests go: the URL after its redirects */
    char *auth_host;             /* the host HF_TOKEN is for (HF_ENDPOINT's), or NULL */
    struct curl_slist *auth;     /* "Authorization: Bearer $HF_TOKEN", or NULL */
    char etag[256];              /* the first response's ETag ("" when none) */
    char modified[128];          /* and Last-Modified */
    bool ranges;                 /* the server answered a range with 206 */
    uint64_t chunk, head_limit;
    tm__head_budget *budget;     /* the header bytes of every file of this model (its owner's) */
    uint8_t *head;
    pthread_mutex_t lock;        /* one request (or one parallel read) at a time */
    CURL *easy[PARALLEL];        /* kept open between requests: their connections are reused */
    uint64_t bytes, requests;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_status;
static void init_curl(void) { curl_init_status = curl_global_init(CURL_GLOBAL_DEFAULT); }

bool tm_remote_supported(void) { return true; }

/* ---- one response ------------------------------------------------------------------------ */

typedef struct transfer {
    uint8_t *dst;
    uint64_t want, got;      /* the body goes to dst, at most want bytes */
    bool stopped;            /* the body went on past want and was cut off on purpose */
    /* the last response's headers (a redirect's are replaced by the next response's) */
    bool has_range, has_total;
    uint64_t range_first, range_last, total;
    char etag[256], modified[128];
    char error[CURL_ERROR_SIZE];
} transfer;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    transfer *t = arg;
    const size_t bytes = size * n;
    const uint64_t room = t->want - t->got;
    const size_t take = bytes < room ? bytes : (size_t)room;
    memcpy(t->dst + t->got, p, take);
    t->got += take;
    if (take < bytes)
        t->stopped = true; /* returning less than given stops the transfer */
    return take;
}

/* A header's value (after "name:"), trimmed, into out; false when the line is another header. */
static bool header_value(const char *line, size_t len, const char *name, char *out, size_t cap)
{
    const size_t nl = strlen(name);
    if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return false;
    const char *v = line + nl + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    size_t k = (size_t)(end - v) < cap - 1 ? (size_t)(end - v) : cap - 1;
    memcpy(out, v, k);
    out[k] = '\0';
    return true;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    transfer *t = arg;
    const size_t len = size * n;
    char v[256];
    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) { /* a new response: forget the last one's */
        t->has_range = t->has_total = false;
        t->etag[0] = t->modified[0] = '\0';
    } else if (header_value(p, len, "content-range", v, sizeof v)) {
        unsigned long long a, b, total;
        char star;
        if (sscanf(v, "bytes %llu-%llu/%llu", &a, &b, &total) == 3) {
            t->has_range = t->has_total = true;
            t->range_first = a;
            t->range_last = b;
            t->total = total;
        } else if (sscanf(v, "bytes %c/%llu", &star, &total) == 2 && star == '*') {
            t->has_total = true; /* a 416's: the size without a range */
            t->total = total;
        }
    } else if (!t->has_range && header_value(p, len, "content-length", v, sizeof v)) {
        char *end;
        unsigned long long total = strtoull(v, &end, 10);
        if (end != v && *end == '\0') {
            t->has_total = true; /* a 200's body is the whole file */
            t->total = total;
        }
    } else if (!header_value(p, len, "etag", t->etag, sizeof t->etag)) {
        header_value(p, len, "last-modified", t->modified, sizeof t->modified);
    }
    return len;
}

static CURL *new_easy(void)
{
    CURL *e = curl_easy_init();
    if (!e)
        return NULL;
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L); /* hubs redirect to a CDN */
    curl_easy_setopt(e, CURLOPT_MAXREDIRS, 10L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 30L);
    /* a transfer slower than 1 KiB/s for 60 s has stalled: give up (and retry) */
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "tensormap/" TM_VERSION_STRING);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    const char *ca = getenv("CURL_CA_BUNDLE");
    if (ca && *ca)
        curl_easy_setopt(e, CURLOPT_CAINFO, ca);
    return e;
}

/* The host (and port) of a URL, malloc'd; NULL when it has none. */
static char *url_host(const char *url)
{
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL, *out = NULL;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
        size_t cap = strlen(host) + strlen(port) + 2;
        if ((out = malloc(cap)) != NULL)
            snprintf(out, cap, "%s:%s", host, port);
    }
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return out;
}

static bool same_host(const char *url, const char *host)
{
    char *h = host ? url_host(url) : NULL;
    bool same = h && strcasecmp(h, host) == 0;
    free(h);
    return same;
}

static bool transient(CURLcode rc, long code)
{
    if (rc == CURLE_OK)
        return code == 429 || code == 500 || code == 502 || code == 503 || code == 504;
    return rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT ||
           rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR || rc == CURLE_GOT_NOTHING ||
           rc == CURLE_PARTIAL_FILE || rc == CURLE_HTTP2 || rc == CURLE_HTTP2_STREAM;
}

static void pause_before(int attempt)
{
    struct timespec ts = {0, 250000000L << (attempt < 2 ? attempt : 2)};
    if (attempt >= 2)
        ts = (struct timespec){(time_t)(1 << (attempt - 2)), 0};
    nanosleep(&ts, NULL);
}

/* Why a transfer failed, in words (curl's own, which name the host, the certificate problem). */
static tm_status transport_fail(const tm__remote *r, CURLcode rc, const transfer *t, int attempts,
                                tm_error *err)
{
    const char *detail = t->error[0] ? t->error : curl_easy_strerror(rc);
    const char *what = rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY
                           ? "cannot resolve the host name: "
                       : rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
                               rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_SSL_CERTPROBLEM
                           ? "TLS failed: "
                       : rc == CURLE_OPERATION_TIMEDOUT ? "timed out: "
                       : rc == CURLE_TOO_MANY_REDIRECTS ? "too many redirects: "
                                                        : "";
    char tries[48] = "";
    if (attempts > 1)
        snprintf(tries, sizeof tries, " (after %d attempts)", attempts);
    return tm__fail(err, TM_IO, TM_NO_OFFSET, "%s%s%s%s", r->shown, what, detail, tries);
}

static tm_status status_fail(const tm__remote *r, long code, int attempts, tm_error *err)
{
    char tries[48] = "";
    if (attempts > 1)
        snprintf(tries, sizeof tries, " (after %d attempts)", attempts);
    if (code == 404 || code == 410)
        return tm__fail(err, TM_NOT_FOUND, TM_NO_OFFSET, "%sHTTP %ld: no such file on the server",
                        r->shown, code);
    if (code == 401 || code == 403) {
        const bool token = getenv("HF_TOKEN") && *getenv("HF_TOKEN");
        return tm__fail(err, TM_IO, TM_NO_OFFSET, "%sHTTP %ld: %s", r->shown, code,
                        token ? "access refused with the token in HF_TOKEN (is it one with "
                                "access to this repository?)"
                              : "access refused (a gated or private repository needs a token: "
                                "set HF_TOKEN)");
    }
    return tm__fail(err, TM_IO, TM_NO_OFFSET, "%sHTTP %ld%s", r->shown, code, tries);
}

static tm_status changed(const tm__remote *r, const char *what, tm_error *err)
{
    return tm__fail(err, TM_IO, TM_NO_OFFSET,
                    "%sthe file changed on the server while it was being read (%s); open it "
                    "again", r->shown, what);
}

/* GET bytes [off, off + len) of url into dst with easy handle e, retrying transient failures.
 * On success *t holds the response (t->got bytes at dst) and *code its status; the caller
 * judges it. *bytes grows by what came over the wire, *requests by the requests made. */
static tm_status get(const tm__remote *r, CURL *e, const char *url, uint64_t off, uint64_t len,
                     uint8_t *dst, transfer *t, long *code, uint64_t *bytes, uint64_t *requests,
                     tm_error *err)
{
    char range[64];
    snprintf(range, sizeof range, "%llu-%llu", (unsigned long long)off,
             (unsigned long long)(off + len - 1));
    /* the token goes to its own host only (libcurl keeps it from a redirect's other host) */
    const bool auth = r->auth && same_host(url, r->auth_host);
    for (int attempt = 0;; attempt++) {
        memset(t, 0, sizeof *t);
        t->dst = dst;
        t->want = len;
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_RANGE, range);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, auth ? r->auth : NULL);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
        CURLcode rc = curl_easy_perform(e);
        curl_off_t wire = 0;
        curl_easy_getinfo(e, CURLINFO_SIZE_DOWNLOAD_T, &wire);
        *bytes += (uint64_t)wire;
        *requests += 1;
        *code = 0;
        if (rc == CURLE_WRITE_ERROR && t->stopped)
            rc = CURLE_OK; /* the body went past what was asked for: cut off on purpose */
        if (rc == CURLE_OK)
            curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, code);
        if (transient(rc, *code) && attempt + 1 < ATTEMPTS) {
            pause_before(attempt);
            continue;
        }
        if (rc != CURLE_OK)
            return transport_fail(r, rc, t, attempt + 1, err);
        if (*code != 200 && *code != 206 && *code != 416)
            return status_fail(r, *code, attempt + 1, err);
        return TM_OK;
    }
}

/* Whether a response is of the same file as the first one. */
static tm_status same_file(const tm__remote *r, const tm__map *m, const transfer *t,
                           tm_error *err)
{
    char what[400];
    if (t->has_total && t->total != m->size) {
        snprintf(what, sizeof what, "%llu bytes, then %llu", (unsigned long long)m->size,
                 (unsigned long long)t->total);
        return changed(r, what, err);
    }
    /* the server's strings are quoted: they reach a terminal */
    char was[128], now[128];
    if (r->etag[0] && strcmp(r->etag, t->etag) != 0) {
        tm__quote(was, sizeof was, r->etag, strlen(r->etag));
        tm__quote(now, sizeof now, t->etag, strlen(t->etag));
        snprintf(what, sizeof what, "ETag %s, then %s", was, t->etag[0] ? now : "none");
        return changed(r, what, err);
    }
    if (!r->etag[0] && r->modified[0] && strcmp(r->modified, t->modified) != 0) {
        tm__quote(was, sizeof was, r->modified, strlen(r->modified));
        tm__quote(now, sizeof now, t->modified, strlen(t->modified));
        snprintf(what, sizeof what, "Last-Modified %s, then %s", was, t->modified[0] ? now : "none");
        return changed(r, what, err);
    }
    return TM_OK;
}

/* Bytes [off, off + len) of the file (inside its size) into dst over handle e, as many
 * requests as the server needs to send them all. */
static tm_status read_range(tm__remote *r, const tm__map *m, CURL *e, uint64_t off, uint64_t len,
                            uint8_t *dst, uint64_t *bytes, uint64_t *requests, tm_error *err)
{
    while (len > 0) {
        transfer t;
        long code;
        tm_status st = get(r, e, r->target, off, len, dst, &t, &code, bytes, requests, err);
        if (st != TM_OK)
            return st;
        if (code == 200)
            return tm__fail(err, TM_IO, TM_NO_OFFSET,
                            "%sthe server ignores Range requests (it answered bytes %llu-%llu "
                            "with the whole file), so reading the tensor data would download "
                            "the file from its start; download it and open the local copy",
                            r->shown, (unsigned long long)off, (unsigned long long)(off + len - 1));
        if (code == 416)
            return changed(r, "a range inside the file is no longer satisfiable", err);
        if ((st = same_file(r, m, &t, err)) != TM_OK)
            return st;
        if (!t.has_range || t.range_first != off || t.got == 0 ||
            t.got != t.range_last - t.range_first + 1)
            return tm__fail(err, TM_IO, TM_NO_OFFSET,
                            "%sasked for bytes %llu-%llu, the server sent %s%llu-%llu (%llu "
                            "bytes)", r->shown, (unsigned long long)off,
                            (unsigned long long)(off + len - 1), t.has_range ? "" : "no range, ",
                            (unsigned long long)t.range_first, (unsigned long long)t.range_last,
                            (unsigned long long)t.got);
        off += t.got; /* a server may send less than asked: ask for the rest */
        dst += t.got;
        len -= t.got;
    }
    return TM_OK;
}

/* ---- parallel reads ------------------------------------------------------------------------ */

typedef struct piece {
    tm__remote *r;
    const tm__map *m;
    CURL *e;
    uint64_t off, len;
    uint8_t *dst;
    uint64_t bytes, requests;
    tm_error err;
    tm_status st;
} piece;

static void *read_piece(void *arg)
{
    piece *p = arg;
    p->st = read_range(p->r, p->m, p->e, p->off, p->len, p->dst, &p->bytes, &p->requests,
                       &p->err);
    return NULL;
}

/* With r->lock held: [off, off + len) into dst, in up to PARALLEL ranges at once. */
static tm_status read_locked(tm__remote *r, const tm__map *m, uint64_t off, uint64_t len,
                             uint8_t *dst, tm_error *err)
{
    uint64_t n = len / PIECE_MIN;
    n = n < 2 ? 1 : n > PARALLEL ? PARALLEL : n;
    piece ps[PARALLEL];
    pthread_t th[PARALLEL];
    bool started[PARALLEL] = {false};
    const uint64_t each = len / n;
    for (uint64_t i = 0; i < n; i++) {
        ps[i] = (piece){.r = r, .m = m, .e = r->easy[i], .off = off + i * each,
                        .len = i + 1 < n ? each : len - i * each, .dst = dst + i * each};
        if (!ps[i].e && !(ps[i].e = r->easy[i] = new_easy()))
            ps[i].st = tm__fail(&ps[i].err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
        else if (i == 0 || pthread_create(&th[i], NULL, read_piece, &ps[i]) != 0)
            read_piece(&ps[i]); /* the first piece on this thread (the others if no thread) */
        else
            started[i] = true;
    }
    tm_status st = TM_OK;
    for (uint64_t i = 0; i < n; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        r->bytes += ps[i].bytes;
        r->requests += ps[i].requests;
        if (st == TM_OK && ps[i].st != TM_OK) {
            st = ps[i].st;
            if (err)
                *err = ps[i].err;
        }
    }
    return st;
}

tm_status tm__remote_read(const tm__map *m, uint64_t offset, uint64_t len, void *buf,
                          tm_error *err)
{
    tm__remote *r = m->remote;
    if (len == 0)
        return TM_OK;
    if (!r->ranges)
        return tm__fail(err, TM_IO, TM_NO_OFFSET,
                        "%sthe server ignores Range requests (it answered the first one with "
                        "the whole file), so reading tensor data would download the file from "
                        "its start; download it and open the local copy", r->shown);
    pthread_mutex_lock(&r->lock);
    tm_status st = read_locked(r, m, offset, len, buf, err);
    pthread_mutex_unlock(&r->lock);
    return st;
}

/* ---- the head ------------------------------------------------------------------------------ */

/* hf:OWNER/REPO/FILE[@REVISION] -> $HF_ENDPOINT/OWNER/REPO/resolve/REVISION/FILE (REVISION
 * percent-encoded whole, as the Hub does for refs/pr/1; FILE keeps its slashes). */
static char *append_encoded(char *o, const char *s, size_t n, bool keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)s[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    return o;
}

static tm_status resolve_hf(const char *spec, char **out, tm_error *err)
{
    const char *owner = spec + 3;
    const char *s1 = strchr(owner, '/');
    const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
    const char *file = s2 ? s2 + 1 : NULL;
    const char *at = file ? strchr(file, '@') : NULL;
    const char *file_end = at ? at : file ? file + strlen(file) : NULL;
    if (!file || s1 == owner || s2 == s1 + 1 || file_end == file || file_end[-1] == '/' ||
        (at && !at[1]))
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET,
                        "a Hugging Face path is hf:OWNER/REPO/FILE or "
                        "hf:OWNER/REPO/FILE@REVISION");
    const char *endpoint = getenv("HF_ENDPOINT");
    if (!endpoint || !*endpoint)
        endpoint = DEFAULT_HF_ENDPOINT;
    size_t ep_len = strlen(endpoint);
    while (ep_len > 0 && endpoint[ep_len - 1] == '/')
        ep_len--;
    const char *rev = at ? at + 1 : "main";
    char *url = malloc(ep_len + 3 * strlen(spec) + 32);
    if (!url)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    char *o = url + ep_len;
    memcpy(url, endpoint, ep_len);
    *o++ = '/';
    o = append_encoded(o, owner, (size_t)(s2 - owner), true);
    memcpy(o, "/resolve/", 9);
    o = append_encoded(o + 9, rev, strlen(rev), false);
    *o++ = '/';
    o = append_encoded(o, file, (size_t)(file_end - file), true);
    *o = '\0';
    *out = url;
    return TM_OK;
}

/* The Authorization header for HF_TOKEN, and the host it is for. */
static tm_status set_auth(tm__remote *r, tm_error *err)
{
    const char *token = getenv("HF_TOKEN");
    if (!token || !*token)
        return TM_OK;
    const char *endpoint = getenv("HF_ENDPOINT");
    r->auth_host = url_host(endpoint && *endpoint ? endpoint : DEFAULT_HF_ENDPOINT);
    size_t cap = strlen(token) + 32;
    char *line = malloc(cap);
    if (line) {
        snprintf(line, cap, "Authorization: Bearer %s", token);
        r->auth = curl_slist_append(NULL, line);
        free(line);
    }
    if (!r->auth_host || !r->auth)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    return TM_OK;
}

/* What is left of TM_HTTP_HEAD_LIMIT for the files of this model. */
static uint64_t head_left(const tm__remote *r)
{
    return r->head_limit > r->budget->spent ? r->head_limit - r->budget->spent : 0;
}

/* The first request's size: a chunk, or, when that would leave the files still to be opened
 * less than their share of the head limit, this file's equal share; never less than MIN_CHUNK,
 * which the format sniffers count on. */
static uint64_t first_request(const tm__remote *r)
{
    const uint32_t files = r->budget->files_to_open ? r->budget->files_to_open : 1;
    const uint64_t share = head_left(r) / files;
    const uint64_t n = share > MIN_CHUNK ? share : MIN_CHUNK;
    return n < r->chunk ? n : r->chunk;
}

/* The first request: the file's first bytes (first of them), its size, and what identifies
 * this version. */
static tm_status fetch_first(tm__map *m, const char *url, uint64_t first, tm_error *err)
{
    tm__remote *r = m->remote;
    r->head = malloc((size_t)first);
    if (!r->head)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    transfer t;
    long code;
    tm_status st = get(r, r->easy[0], url, 0, first, r->head, &t, &code, &r->bytes,
                       &r->requests, err);
    if (st != TM_OK)
        return st;
    char *effective = NULL;
    curl_easy_getinfo(r->easy[0], CURLINFO_EFFECTIVE_URL, &effective);
    if (!(r->target = strdup(effective ? effective : url)))
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    if (!t.has_total || (code == 206 && !t.has_range))
        return tm__fail(err, TM_IO, TM_NO_OFFSET,
                        "%sthe server did not say how long the file is (HTTP %ld without "
                        "Content-Range or Content-Length)", r->shown, code);
    m->size = t.total;
    r->ranges = code == 206;
    snprintf(r->etag, sizeof r->etag, "%s", t.etag);
    snprintf(r->modified, sizeof r->modified, "%s", t.modified);
    if (code == 416) {
        if (t.total != 0)
            return tm__fail(err, TM_IO, TM_NO_OFFSET, "%sHTTP 416 for the first bytes of a "
                            "%llu-byte file", r->shown, (unsigned long long)t.total);
        t.got = 0; /* an empty file: the walk says so */
    } else if (code == 206 && (t.range_first != 0 || t.got != t.range_last + 1)) {
        return tm__fail(err, TM_IO, TM_NO_OFFSET,
                        "%sasked for the first %llu bytes, the server sent bytes %llu-%llu "
                        "(%llu bytes)", r->shown, (unsigned long long)first,
                        (unsigned long long)t.range_first, (unsigned long long)t.range_last,
                        (unsigned long long)t.got);
    }
    if (t.got < (m->size < first ? m->size : first))
        return tm__fail(err, TM_IO, TM_NO_OFFSET, "%sthe server sent %llu of the first %llu "
                        "bytes", r->shown, (unsigned long long)t.got,
                        (unsigned long long)(m->size < first ? m->size : first));
    m->avail = t.got;
    m->base = r->head;
    return TM_OK;
}

tm_status tm__remote_open(tm__map *m, const char *url, tm__head_budget *budget, tm_error *err)
{
    memset(m, 0, sizeof *m);
    pthread_once(&curl_once, init_curl);
    if (curl_init_status != CURLE_OK)
        return tm__fail(err, TM_IO, TM_NO_OFFSET, "libcurl failed to start: %s",
                        curl_easy_strerror(curl_init_status));
    tm__remote *r = calloc(1, sizeof *r);
    if (!r)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    pthread_mutex_init(&r->lock, NULL);
    m->kind = TM__MAP_REMOTE;
    m->remote = r;
    r->chunk = tm__env_bytes("TM_HTTP_CHUNK", DEFAULT_CHUNK);
    if (r->chunk < MIN_CHUNK)
        r->chunk = MIN_CHUNK;
    r->head_limit = tm__env_bytes("TM_HTTP_HEAD_LIMIT", DEFAULT_HEAD_LIMIT);
    r->budget = budget;
    const bool hf = strncmp(url, "hf:", 3) == 0;
    tm_status st = hf ? resolve_hf(url, &m->path, err)
                   : (m->path = strdup(url)) != NULL
                       ? TM_OK
                       : tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    if (st == TM_OK) {
        char shown[300] = "";
        if (hf)
            tm__quote(shown, sizeof shown - 2, m->path, strlen(m->path));
        if (hf)
            strcat(shown, ": ");
        if (!(r->shown = strdup(shown)))
            st = tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    }
    if (st == TM_OK)
        st = set_auth(r, err);
    if (st == TM_OK && !(r->easy[0] = new_easy()))
        st = tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    const uint64_t first = first_request(r);
    if (st == TM_OK && first > head_left(r))
        st = tm__fail(err, TM_LIMIT, TM_NO_OFFSET,
                      "%sthe files opened before this one left %llu bytes of TM_HTTP_HEAD_LIMIT "
                      "(%llu bytes of header for all the files of a model together), less than "
                      "a first request of %llu; download the model, or raise the limit",
                      r->shown, (unsigned long long)head_left(r),
                      (unsigned long long)r->head_limit, (unsigned long long)first);
    if (st == TM_OK)
        st = fetch_first(m, m->path, first, err);
    budget->spent += r->bytes;
    if (budget->files_to_open)
        budget->files_to_open--;
    if (st != TM_OK) {
        tm__remote_close(m);
        free(m->path);
        memset(m, 0, sizeof *m);
    }
    return st;
}

tm_status tm__remote_need(tm__map *m, uint64_t end, tm_error *err)
{
    tm__remote *r = m->remote;
    /* Whole chunks past what the walk asked for, so that the next few fields come along; in
     * steps of half the head once it is large, so that a huge header is not walked again
     * once per chunk. */
    const uint64_t step = m->avail < 16 * r->chunk ? r->chunk : m->avail / 2;
    uint64_t want = end > m->avail + step ? end : m->avail + step;
    if (!r->ranges && want < 2 * m->avail)
        want = 2 * m->avail; /* each step starts again from byte 0: double */
    if (want > m->size)
        want = m->size;
    /* The limit is on what every file of the model transfers for its head together: a range
     * costs what it adds, a server ignoring ranges sends the start again. When the whole step
     * does not fit, half of what is left (the files walked after this one keep the rest), but
     * never less than the walk needs. */
    const uint64_t needed = end < m->size ? end : m->size;
    const uint64_t left = head_left(r), from = r->ranges ? m->avail : 0;
    if (want - from > left)
        want = from + left / 2 > needed ? from + left / 2 : needed;
    if (want - from > left)
        return tm__fail(err, TM_LIMIT, m->avail,
                        "%sthe header walk needs more than TM_HTTP_HEAD_LIMIT (%llu bytes of "
                        "header for all the files of a model together, %llu fetched so far; "
                        "this file's walk reached byte %llu and needs byte %llu); download it, "
                        "or raise the limit", r->shown, (unsigned long long)r->head_limit,
                        (unsigned long long)r->budget->spent, (unsigned long long)m->avail,
                        (unsigned long long)end);
    uint8_t *head = realloc(r->head, (size_t)want);
    if (!head)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for %llu bytes of header",
                        (unsigned long long)want);
    r->head = head;
    m->base = head;
    pthread_mutex_lock(&r->lock);
    const uint64_t before = r->bytes;
    tm_status st;
    if (r->ranges) {
        st = read_locked(r, m, m->avail, want - m->avail, head + m->avail, err);
    } else {
        /* The server sends the whole file each time: read its start again, as far as needed,
         * and stop there. */
        transfer t;
        long code;
        st = get(r, r->easy[0], r->target, 0, want, head, &t, &code, &r->bytes, &r->requests,
                 err);
        if (st == TM_OK)
            st = same_file(r, m, &t, err);
        if (st == TM_OK && t.got != want)
            st = changed(r, "it ended sooner", err);
    }
    r->budget->spent += r->bytes - before;
    pthread_mutex_unlock(&r->lock);
    if (st == TM_OK)
        m->avail = want;
    return st;
}

void tm__remote_close(tm__map *m)
{
    tm__remote *r = m->remote;
    if (!r)
        return;
    for (int i = 0; i < PARALLEL; i++)
        if (r->easy[i])
            curl_easy_cleanup(r->easy[i]);
    curl_slist_free_all(r->auth);
    pthread_mutex_destroy(&r->lock);
    free(r->head);
    free(r->target);
    free(r->auth_host);
    free(r->shown);
    free(r);
    m->remote = NULL;
    m->base = NULL;
}

void tm__remote_fetched(const tm__map *m, uint64_t *bytes, uint64_t *requests)
{
    tm__remote *r = m->remote;
    pthread_mutex_lock(&r->lock);
    *bytes = r->bytes;
    *requests = r->requests;
    pthread_mutex_unlock(&r->lock);
}

#endif /* TM_HAVE_CURL */
