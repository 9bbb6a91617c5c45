/* A remote file: the bytes of a file on a web server, read with HTTP range requests through
 * libcurl. The head (the first TM_HTTP_CHUNK bytes, then as far as the header walk needs) is
 * kept in memory for the walkers; tensor bytes are fetched into the caller's buffer, in several
 * ranges at once for large reads. Every response is checked against the first one (size, ETag
 * or Last-Modified), so a file replaced on the server is refused rather than mixed. */
#include "source.h"

#include <stdlib.h>
#include <strings.h>

#ifndef TM_HAVE_CURL

bool tm_remote_supported(void) { return false; }

tm_status tm__http_open(tm__source *s, const char *url, bool show_url, const tm__http_auth *auth,
                        tm__head_budget *budget, tm_error *err)
{
    (void)s, (void)url, (void)show_url, (void)auth, (void)budget;
    return tm__fail(err, TM_UNSUPPORTED, TM_NO_OFFSET,
                    "this tensormap was built without libcurl, so it cannot read URLs "
                    "(install libcurl4-openssl-dev and rebuild)");
}

#else /* TM_HAVE_CURL */

#include <curl/curl.h>
#include <limits.h>
#include <pthread.h>
#include <time.h>

#define DEFAULT_CHUNK (2ull << 20)
#define MIN_CHUNK (4ull << 10)
#define DEFAULT_HEAD_LIMIT (256ull << 20)
/* Reads of at least 2 x PIECE_MIN bytes go out as up to PARALLEL ranges at once, a BATCH at a
 * time. */
#define PARALLEL 4
#define PIECE_MIN (4ull << 20)
#define BATCH (PARALLEL * PIECE_MIN)
/* Attempts for a transient failure (connection errors, HTTP 429 and 5xx), 0.25 s apart,
 * doubling. */
#define ATTEMPTS 4
/* TM_HTTP_TIMEOUT's default: the seconds a step of a read may take (the first request, an
 * extension of the header, a BATCH of tensor bytes), its retries and the requests for the rest
 * of a short answer included. A server that is silent, or sends a byte at a time, or a trickle
 * just above the stall rate, fails within it instead of holding the command for hours. */
#define DEFAULT_TIMEOUT_S 120

typedef struct remote {
    char *shown;                 /* "URL: " for an hf: path (the URL it resolved to), else "":
                                  * what messages start with (the caller names the path) */
    char *target;                /* where range requests go: the URL after its redirects */
    char *auth_origin;           /* "scheme://host:port" auth is for, or NULL */
    struct curl_slist *auth;     /* the caller's header ("Authorization: Bearer ..."), or NULL */
    char *sigv4, *key, *secret;  /* Signature V4's provider and key pair, or NULL */
    bool no_redirects;
    bool (*explain)(const char *, long, const uint8_t *, size_t, char *, size_t);
    char *explain_arg;
    char etag[256];              /* the first response's ETag ("" when none) */
    char modified[128];          /* and Last-Modified */
    bool ranges;                 /* the server answered a range with 206 */
    uint64_t chunk, head_limit;
    uint64_t timeout_ms;         /* TM_HTTP_TIMEOUT; 0: no deadline */
    tm__head_budget *budget;     /* the header bytes of every file of this model (its owner's, or
                                  * own_budget) */
    tm__head_budget own_budget;
    uint8_t *head;
    pthread_mutex_t lock;        /* one request (or one parallel read) at a time */
    CURL *easy[PARALLEL];        /* kept open between requests: their connections are reused */
    uint64_t bytes, requests;
} remote;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_status;
static void init_curl(void) { curl_init_status = curl_global_init(CURL_GLOBAL_DEFAULT); }

bool tm_remote_supported(void) { return true; }

/* ---- one response ------------------------------------------------------------------------ */

/* What of an error's body is kept for the caller's explain (an S3 error's XML is shorter). */
#define ERROR_BODY 2048

typedef struct transfer {
    long status;             /* the last response's, from its status line */
    char error_body[ERROR_BODY]; /* the start of a body that is not the file's (status >= 300) */
    size_t error_len;
    uint8_t *dst;
    uint64_t want, got;      /* the body goes to dst, at most want bytes */
    bool stopped;            /* the body went on past want and was cut off on purpose */
    /* the last response's headers (a redirect's are replaced by the next response's) */
    bool headers_done;       /* its blank line came: what follows is its body */
    bool has_range, has_total;
    uint64_t range_first, range_last, total;
    char etag[256], modified[128];
    char error[CURL_ERROR_SIZE];
} transfer;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    transfer *t = arg;
    const size_t bytes = size * n;
    if (t->status >= 300) { /* not the file's bytes: kept apart, as far as they fit */
        const size_t keep = bytes < ERROR_BODY - t->error_len ? bytes : ERROR_BODY - t->error_len;
        memcpy(t->error_body + t->error_len, p, keep);
        t->error_len += keep;
        return bytes;
    }
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
        t->headers_done = t->has_range = t->has_total = false;
        t->etag[0] = t->modified[0] = '\0';
        t->error_len = 0;
        const char *sp = memchr(p, ' ', len);
        t->status = sp && (size_t)(sp - p) + 4 <= len ? strtol(sp + 1, NULL, 10) : 0;
    } else if ((len == 2 && p[0] == '\r' && p[1] == '\n') || (len == 1 && p[0] == '\n')) {
        t->headers_done = true;
    } else if (header_value(p, len, "content-range", v, sizeof v)) {
        uint64_t a, b, total;
        char star;
        if (sscanf(v, "bytes %" SCNu64 "-%" SCNu64 "/%" SCNu64, &a, &b, &total) == 3) {
            t->has_range = t->has_total = true;
            t->range_first = a;
            t->range_last = b;
            t->total = total;
        } else if (sscanf(v, "bytes %c/%" SCNu64, &star, &total) == 2 && star == '*') {
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

/* A URL's origin, "scheme://host:port" (the port spelled out when the URL leaves it to the
 * scheme), malloc'd; NULL when it has none. */
static char *url_origin(const char *url)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *out = NULL;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
        size_t cap = strlen(scheme) + strlen(host) + strlen(port) + 5;
        if ((out = malloc(cap)) != NULL)
            snprintf(out, cap, "%s://%s:%s", scheme, host, port);
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return out;
}

/* Whether url is of origin: the same scheme, host and port. A token for an https endpoint is
 * not sent over plain HTTP to the same host and port (a redirect may lead there), nor to
 * another port or host. */
static bool same_origin(const char *url, const char *origin)
{
    char *o = origin ? url_origin(url) : NULL;
    bool same = o && strcasecmp(o, origin) == 0;
    free(o);
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

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One easy handle's part of a step of a read: the requests it makes, by when they must be
 * done, and what they cost. */
typedef struct exchange {
    CURL *e;
    uint64_t deadline;        /* now_ms() by which the step must end; 0: none */
    uint64_t bytes, requests; /* over the wire (tm_file_fetched) */
} exchange;

/* A step on handle e starting now. */
static exchange begin_step(const remote *r, CURL *e)
{
    const uint64_t now = now_ms();
    const bool none = r->timeout_ms == 0 || r->timeout_ms > UINT64_MAX - now;
    return (exchange){e, none ? 0 : now + r->timeout_ms, 0, 0};
}

/* Milliseconds before x's deadline: 0 once it has passed, UINT64_MAX without one. */
static uint64_t time_left(const exchange *x)
{
    if (!x->deadline)
        return UINT64_MAX;
    const uint64_t now = now_ms();
    return now < x->deadline ? x->deadline - now : 0;
}

/* The pause before attempt + 1: 0.25 s, doubling. */
static uint64_t pause_ms(int attempt) { return 250u << attempt; }

/* Why a transfer failed, in words (curl's own, which name the host, the certificate problem). */
static tm_status transport_fail(const remote *r, CURLcode rc, const transfer *t, int attempts,
                                tm_error *err)
{
    if (rc == CURLE_OUT_OF_MEMORY && !t->headers_done)
        /* libcurl refuses a header line longer than it holds with "Out of memory" */
        return tm__fail(err, TM_IO, TM_NO_OFFSET,
                        "%sthe server sent a response header line longer than libcurl accepts "
                        "(%d bytes)", r->shown, CURL_MAX_HTTP_HEADER);
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

static tm_status status_fail(const remote *r, long code, const transfer *t, int attempts,
                             tm_error *err)
{
    char tries[48] = "", said[512];
    if (attempts > 1)
        snprintf(tries, sizeof tries, " (after %d attempts)", attempts);
    if (r->explain && r->explain(r->explain_arg, code, (const uint8_t *)t->error_body,
                                 t->error_len, said, sizeof said))
        return tm__fail(err, code == 404 || code == 410 ? TM_NOT_FOUND : TM_IO, TM_NO_OFFSET,
                        "%sHTTP %ld: %s%s", r->shown, code, said, tries);
    if (code == 404 || code == 410)
        return tm__fail(err, TM_NOT_FOUND, TM_NO_OFFSET, "%sHTTP %ld: no such file on the server",
                        r->shown, code);
    if (code == 401 || code == 403) {
        const bool token = r->auth != NULL;
        return tm__fail(err, TM_IO, TM_NO_OFFSET, "%sHTTP %ld: %s", r->shown, code,
                        token ? "access refused with the token in HF_TOKEN (is it one with "
                                "access to this repository?)"
                              : "access refused (a gated or private repository needs a token: "
                                "set HF_TOKEN)");
    }
    return tm__fail(err, TM_IO, TM_NO_OFFSET, "%sHTTP %ld%s", r->shown, code, tries);
}

static tm_status timed_out(const remote *r, uint64_t off, uint64_t len, tm_error *err)
{
    return tm__fail(err, TM_IO, TM_NO_OFFSET,
                    "%stimed out: bytes %" PRIu64 "-%" PRIu64
                    " did not arrive within TM_HTTP_TIMEOUT (%" PRIu64 " s; "
                    "set it to wait longer)",
                    r->shown, (uint64_t)off, (uint64_t)(off + len - 1),
                    (uint64_t)(r->timeout_ms / 1000));
}

static tm_status changed(const remote *r, const char *what, tm_error *err)
{
    return tm__fail(err, TM_IO, TM_NO_OFFSET,
                    "%sthe file changed on the server while it was being read (%s); open it "
                    "again", r->shown, what);
}

/* GET bytes [off, off + len) of url into dst over x, retrying transient failures while x's
 * deadline allows. On success *t holds the response (t->got bytes at dst) and *code its
 * status; the caller judges it. x counts what came over the wire and the requests made. */
static tm_status get(const remote *r, exchange *x, const char *url, uint64_t off, uint64_t len,
                     uint8_t *dst, transfer *t, long *code, tm_error *err)
{
    CURL *e = x->e;
    char range[64];
    snprintf(range, sizeof range, "%" PRIu64 "-%" PRIu64, (uint64_t)off, (uint64_t)(off + len - 1));
    /* the token and the key pair go to their own origin only (libcurl keeps them from a
     * redirect's other host; a signed request follows none) */
    const bool auth = r->auth_origin && same_origin(url, r->auth_origin);
    for (int attempt = 0;; attempt++) {
        const uint64_t left = time_left(x);
        if (left == 0)
            return timed_out(r, off, len, err);
        memset(t, 0, sizeof *t);
        t->dst = dst;
        t->want = len;
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_RANGE, range);
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, r->no_redirects ? 0L : 1L);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, auth ? r->auth : NULL);
        if (r->sigv4) {
            curl_easy_setopt(e, CURLOPT_AWS_SIGV4, auth ? r->sigv4 : NULL);
            curl_easy_setopt(e, CURLOPT_USERNAME, auth ? r->key : NULL);
            curl_easy_setopt(e, CURLOPT_PASSWORD, auth ? r->secret : NULL);
        }
        curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, left > LONG_MAX ? 0L : (long)left);
        CURLcode rc = curl_easy_perform(e);
        curl_off_t wire = 0;
        curl_easy_getinfo(e, CURLINFO_SIZE_DOWNLOAD_T, &wire);
        x->bytes += (uint64_t)wire;
        x->requests += 1;
        *code = 0;
        if (rc == CURLE_WRITE_ERROR && t->stopped)
            rc = CURLE_OK; /* the body went past what was asked for: cut off on purpose */
        if (rc == CURLE_OK)
            curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, code);
        const uint64_t ms = pause_ms(attempt);
        const bool time_for_more = time_left(x) > ms;
        if (transient(rc, *code) && attempt + 1 < ATTEMPTS && time_for_more) {
            nanosleep(&(struct timespec){(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L}, NULL);
            continue;
        }
        /* libcurl's clock may stop it a moment before ours says the deadline has come */
        if (rc == CURLE_OPERATION_TIMEDOUT && !time_for_more)
            return timed_out(r, off, len, err);
        if (rc != CURLE_OK)
            return transport_fail(r, rc, t, attempt + 1, err);
        if (*code != 200 && *code != 206 && *code != 416)
            return status_fail(r, *code, t, attempt + 1, err);
        return TM_OK;
    }
}

/* Whether a response is of the same file as the first one. */
static tm_status same_file(const remote *r, const tm__source *s, const transfer *t,
                           tm_error *err)
{
    char what[400];
    if (t->has_total && t->total != s->size) {
        snprintf(what, sizeof what, "%" PRIu64 " bytes, then %" PRIu64, (uint64_t)s->size,
                 (uint64_t)t->total);
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

/* Whether a 206 answers a request for bytes [off, off + len) with a Content-Range it can be
 * taken for: starting where asked, ending inside what was asked and inside the total it
 * declares, with a body that long. */
static bool range_fits(const transfer *t, uint64_t off, uint64_t len)
{
    return t->has_range && t->range_first == off && t->range_last >= t->range_first &&
           t->range_last - off < len && t->range_last < t->total &&
           t->got == t->range_last - t->range_first + 1;
}

static tm_status range_fail(const remote *r, const transfer *t, uint64_t off, uint64_t len,
                            tm_error *err)
{
    char sent[96] = "no Content-Range";
    if (t->has_range)
        snprintf(sent, sizeof sent, "Content-Range bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64,
                 (uint64_t)t->range_first, (uint64_t)t->range_last, (uint64_t)t->total);
    const char *why = !t->has_range                    ? ""
                      : t->range_last >= t->total      ? ", which runs past the total it declares"
                      : t->range_last < t->range_first ? ", which ends before it starts"
                                                       : "";
    return tm__fail(
        err, TM_IO, TM_NO_OFFSET,
        "%sasked for bytes %" PRIu64 "-%" PRIu64 ", the server sent %" PRIu64 " bytes with %s%s",
        r->shown, (uint64_t)off, (uint64_t)(off + len - 1), (uint64_t)t->got, sent, why);
}

/* Bytes [off, off + len) of the file (inside its size) into dst over x, as many requests as
 * the server needs to send them all (within x's deadline). */
static tm_status read_range(const remote *r, const tm__source *s, exchange *x, uint64_t off,
                            uint64_t len, uint8_t *dst, tm_error *err)
{
    while (len > 0) {
        transfer t;
        long code;
        tm_status st = get(r, x, r->target, off, len, dst, &t, &code, err);
        if (st != TM_OK)
            return st;
        if (code == 200)
            return tm__fail(err, TM_IO, TM_NO_OFFSET,
                            "%sthe server ignores Range requests (it answered bytes %" PRIu64
                            "-%" PRIu64 " "
                            "with the whole file), so reading the tensor data would download "
                            "the file from its start; download it and open the local copy",
                            r->shown, (uint64_t)off, (uint64_t)(off + len - 1));
        if (code == 416)
            return changed(r, "a range inside the file is no longer satisfiable", err);
        if ((st = same_file(r, s, &t, err)) != TM_OK)
            return st;
        if (!range_fits(&t, off, len))
            return range_fail(r, &t, off, len, err);
        off += t.got; /* a server may send less than asked: ask for the rest */
        dst += t.got;
        len -= t.got;
    }
    return TM_OK;
}

/* ---- parallel reads ------------------------------------------------------------------------ */

typedef struct piece {
    const remote *r;
    const tm__source *s;
    exchange x;
    uint64_t off, len;
    uint8_t *dst;
    tm_error err;
    tm_status st;
} piece;

static void *read_piece(void *arg)
{
    piece *p = arg;
    p->st = read_range(p->r, p->s, &p->x, p->off, p->len, p->dst, &p->err);
    return NULL;
}

/* With r->lock held: [off, off + len) (at most a BATCH) into dst, in up to PARALLEL ranges at
 * once, all within one step's deadline. */
static tm_status read_batch(remote *r, const tm__source *s, uint64_t off, uint64_t len,
                            uint8_t *dst, tm_error *err)
{
    uint64_t n = len / PIECE_MIN;
    n = n < 2 ? 1 : n > PARALLEL ? PARALLEL : n;
    piece ps[PARALLEL];
    pthread_t th[PARALLEL];
    bool started[PARALLEL] = {false};
    const uint64_t each = len / n;
    for (uint64_t i = 0; i < n; i++) {
        if (!r->easy[i])
            r->easy[i] = new_easy();
        ps[i] = (piece){.r = r, .s = s, .x = begin_step(r, r->easy[i]),
                        .off = off + i * each, .len = i + 1 < n ? each : len - i * each,
                        .dst = dst + i * each};
        if (!ps[i].x.e)
            ps[i].st = tm__fail(&ps[i].err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    }
    /* the other pieces on threads of their own, started before the first runs on this one
     * (a piece whose thread cannot be had runs here too) */
    for (uint64_t i = n; i-- > 0;) {
        if (!ps[i].x.e)
            continue;
        if (i > 0 && pthread_create(&th[i], NULL, read_piece, &ps[i]) == 0)
            started[i] = true;
        else
            read_piece(&ps[i]);
    }
    tm_status st = TM_OK;
    for (uint64_t i = 0; i < n; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        r->bytes += ps[i].x.bytes;
        r->requests += ps[i].x.requests;
        if (st == TM_OK && ps[i].st != TM_OK) {
            st = ps[i].st;
            if (err)
                *err = ps[i].err;
        }
    }
    return st;
}

/* With r->lock held: [off, off + len) into dst, a BATCH at a time, each a step of its own: the
 * deadline bounds how long a server may take for a BATCH, not how long a large read lasts. */
static tm_status read_locked(remote *r, const tm__source *s, uint64_t off, uint64_t len,
                             uint8_t *dst, tm_error *err)
{
    tm_status st = TM_OK;
    for (uint64_t done = 0; done < len && st == TM_OK; done += BATCH)
        st = read_batch(r, s, off + done, len - done < BATCH ? len - done : BATCH, dst + done,
                        err);
    return st;
}

static tm_status http_read(const tm__source *s, uint64_t offset, uint64_t len, void *buf,
                           tm_error *err)
{
    remote *r = s->impl;
    if (len == 0)
        return TM_OK;
    if (!r->ranges)
        return tm__fail(err, TM_IO, TM_NO_OFFSET,
                        "%sthe server ignores Range requests (it answered the first one with "
                        "the whole file), so reading tensor data would download the file from "
                        "its start; download it and open the local copy", r->shown);
    pthread_mutex_lock(&r->lock);
    tm_status st = read_locked(r, s, offset, len, buf, err);
    pthread_mutex_unlock(&r->lock);
    return st;
}

/* ---- the head ------------------------------------------------------------------------------ */

static bool dup_or_null(char **to, const char *from) { return !from || (*to = strdup(from)); }

/* The caller's header and key pair, for the scheme, host and port of its origin. A request
 * signed with Signature V4 carries the hash of its body, which for a GET is empty: S3 wants it
 * as a header (x-amz-content-sha256) of its own, and libcurl signs it along. */
static tm_status set_auth(remote *r, const tm__http_auth *auth, tm_error *err)
{
    if (!auth)
        return TM_OK;
    static const char empty_sha256[] =
        "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    r->no_redirects = auth->no_redirects;
    r->explain = auth->explain;
    r->auth_origin = url_origin(auth->origin);
    bool ok = r->auth_origin && dup_or_null(&r->sigv4, auth->sigv4) &&
              dup_or_null(&r->key, auth->key) && dup_or_null(&r->secret, auth->secret) &&
              dup_or_null(&r->explain_arg, auth->explain_arg);
    const char *const lines[] = {auth->header, auth->sigv4 ? empty_sha256 : NULL};
    for (size_t i = 0; ok && i < 2; i++) {
        struct curl_slist *more = lines[i] ? curl_slist_append(r->auth, lines[i]) : r->auth;
        ok = more || !lines[i];
        r->auth = more ? more : r->auth; /* a failed append leaves the list as it was */
    }
    return ok ? TM_OK : tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
}

/* What is left of TM_HTTP_HEAD_LIMIT for the files of this model. */
static uint64_t head_left(const remote *r)
{
    return r->head_limit > r->budget->spent ? r->head_limit - r->budget->spent : 0;
}

/* The first request's size: a chunk, or, when that would leave the files still to be opened
 * less than their share of the head limit, this file's equal share; never less than MIN_CHUNK,
 * which the format sniffers count on. */
static uint64_t first_request(const remote *r)
{
    const uint32_t files = r->budget->files_to_open ? r->budget->files_to_open : 1;
    const uint64_t share = head_left(r) / files;
    const uint64_t n = share > MIN_CHUNK ? share : MIN_CHUNK;
    return n < r->chunk ? n : r->chunk;
}

/* The first request: the file's first bytes (first of them), its size, and what identifies
 * this version. */
static tm_status fetch_first(tm__source *s, const char *url, uint64_t first, tm_error *err)
{
    remote *r = s->impl;
    r->head = malloc((size_t)first);
    if (!r->head)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    transfer t;
    long code;
    exchange x = begin_step(r, r->easy[0]);
    tm_status st = get(r, &x, url, 0, first, r->head, &t, &code, err);
    r->bytes += x.bytes;
    r->requests += x.requests;
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
    s->size = t.total;
    r->ranges = code == 206;
    snprintf(r->etag, sizeof r->etag, "%s", t.etag);
    snprintf(r->modified, sizeof r->modified, "%s", t.modified);
    if (code == 416) {
        if (t.total != 0)
            return tm__fail(err, TM_IO, TM_NO_OFFSET,
                            "%sHTTP 416 for the first bytes of a "
                            "%" PRIu64 "-byte file",
                            r->shown, (uint64_t)t.total);
        t.got = 0; /* an empty file: the walk says so */
    } else if (code == 206 && !range_fits(&t, 0, first)) {
        return range_fail(r, &t, 0, first, err);
    }
    if (t.got > s->size) /* the head never holds more than the file: the walks trust that */
        return tm__fail(err, TM_IO, TM_NO_OFFSET,
                        "%sthe server sent %" PRIu64 " bytes of a file it "
                        "says is %" PRIu64 " bytes long",
                        r->shown, (uint64_t)t.got, (uint64_t)s->size);
    if (t.got < (s->size < first ? s->size : first))
        return tm__fail(err, TM_IO, TM_NO_OFFSET,
                        "%sthe server sent %" PRIu64 " of the first %" PRIu64 " "
                        "bytes",
                        r->shown, (uint64_t)t.got, (uint64_t)(s->size < first ? s->size : first));
    s->avail = t.got;
    s->base = r->head;
    return TM_OK;
}

static tm_status http_need(tm__source *s, uint64_t end, tm_error *err)
{
    remote *r = s->impl;
    /* Whole chunks past what the walk asked for, so that the next few fields come along; in
     * steps of half the head once it is large, so that a huge header is not walked again
     * once per chunk. */
    const uint64_t step = s->avail < 16 * r->chunk ? r->chunk : s->avail / 2;
    uint64_t want = end > s->avail + step ? end : s->avail + step;
    if (!r->ranges && want < 2 * s->avail)
        want = 2 * s->avail; /* each step starts again from byte 0: double */
    if (want > s->size)
        want = s->size;
    /* The limit is on what every file of the model transfers for its head together: a range
     * costs what it adds, a server ignoring ranges sends the start again. When the whole step
     * does not fit, half of what is left (the files walked after this one keep the rest), but
     * never less than the walk needs. */
    const uint64_t needed = end < s->size ? end : s->size;
    const uint64_t left = head_left(r), from = r->ranges ? s->avail : 0;
    if (want - from > left)
        want = from + left / 2 > needed ? from + left / 2 : needed;
    if (want - from > left)
        return tm__fail(
            err, TM_LIMIT, s->avail,
            "%sthe header walk needs more than TM_HTTP_HEAD_LIMIT (%" PRIu64 " bytes of "
            "header for all the files of a model together, %" PRIu64 " fetched so far; "
            "this file's walk reached byte %" PRIu64 " and needs byte %" PRIu64 "); download it, "
            "or raise the limit",
            r->shown, (uint64_t)r->head_limit, (uint64_t)r->budget->spent, (uint64_t)s->avail,
            (uint64_t)end);
    uint8_t *head = realloc(r->head, (size_t)want);
    if (!head)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET,
                        "out of memory for %" PRIu64 " bytes of header", (uint64_t)want);
    r->head = head;
    s->base = head;
    pthread_mutex_lock(&r->lock);
    const uint64_t before = r->bytes;
    tm_status st;
    if (r->ranges) {
        st = read_locked(r, s, s->avail, want - s->avail, head + s->avail, err);
    } else {
        /* The server sends the whole file each time: read its start again, as far as needed,
         * and stop there. */
        transfer t;
        long code;
        exchange x = begin_step(r, r->easy[0]);
        st = get(r, &x, r->target, 0, want, head, &t, &code, err);
        r->bytes += x.bytes;
        r->requests += x.requests;
        if (st == TM_OK)
            st = same_file(r, s, &t, err);
        if (st == TM_OK && t.got != want)
            st = changed(r, "it ended sooner", err);
    }
    r->budget->spent += r->bytes - before;
    pthread_mutex_unlock(&r->lock);
    if (st == TM_OK)
        s->avail = want;
    return st;
}

static void http_close(tm__source *s)
{
    remote *r = s->impl;
    for (int i = 0; i < PARALLEL; i++)
        if (r->easy[i])
            curl_easy_cleanup(r->easy[i]);
    curl_slist_free_all(r->auth);
    if (r->secret)
        explicit_bzero(r->secret, strlen(r->secret));
    free(r->sigv4);
    free(r->key);
    free(r->secret);
    free(r->explain_arg);
    pthread_mutex_destroy(&r->lock);
    free(r->head);
    free(r->target);
    free(r->auth_origin);
    free(r->shown);
    free(r);
    s->impl = NULL;
    s->base = NULL;
}

static void http_fetched(const tm__source *s, uint64_t *bytes, uint64_t *requests)
{
    remote *r = s->impl;
    pthread_mutex_lock(&r->lock);
    *bytes = r->bytes;
    *requests = r->requests;
    pthread_mutex_unlock(&r->lock);
}

/* ---- for download.c ---------------------------------------------------------------------- */

CURL *tm__http_easy(void)
{
    pthread_once(&curl_once, init_curl);
    return curl_init_status == CURLE_OK ? new_easy() : NULL;
}

bool tm__http_header_value(const char *line, size_t len, const char *name, char *out,
                           size_t cap)
{
    return header_value(line, len, name, out, cap);
}

bool tm__http_reads_ranges(const tm__source *s)
{
    const remote *r = s->impl;
    return r->ranges || s->avail >= s->size;
}

const char *tm__http_validator(const tm__source *s)
{
    const remote *r = s->impl;
    return r->etag[0] ? r->etag : r->modified;
}

static const tm__source_ops http_ops = {
    .need = http_need, .read = http_read, .close = http_close, .fetched = http_fetched};

tm_status tm__http_open(tm__source *s, const char *url, bool show_url, const tm__http_auth *auth,
                        tm__head_budget *budget, tm_error *err)
{
    pthread_once(&curl_once, init_curl);
    if (curl_init_status != CURLE_OK)
        return tm__fail(err, TM_IO, TM_NO_OFFSET, "libcurl failed to start: %s",
                        curl_easy_strerror(curl_init_status));
    remote *r = calloc(1, sizeof *r);
    if (!r)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    pthread_mutex_init(&r->lock, NULL);
    s->impl = r;
    r->chunk = tm__env_bytes("TM_HTTP_CHUNK", DEFAULT_CHUNK);
    if (r->chunk < MIN_CHUNK)
        r->chunk = MIN_CHUNK;
    r->head_limit = tm__env_bytes("TM_HTTP_HEAD_LIMIT", DEFAULT_HEAD_LIMIT);
    r->budget = budget ? budget : &r->own_budget;
    const uint64_t timeout_s = tm__env_bytes("TM_HTTP_TIMEOUT", DEFAULT_TIMEOUT_S);
    r->timeout_ms = timeout_s > UINT64_MAX / 1000 ? 0 : timeout_s * 1000; /* absurd: none */
    char shown[300] = "";
    if (show_url) {
        tm__quote(shown, sizeof shown - 2, url, strlen(url));
        strcat(shown, ": ");
    }
    tm_status st = (r->shown = strdup(shown)) ? TM_OK
                   : tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    if (st == TM_OK)
        st = set_auth(r, auth, err);
    if (st == TM_OK && !(r->easy[0] = new_easy()))
        st = tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    const uint64_t first = first_request(r);
    if (st == TM_OK && first > head_left(r))
        st = tm__fail(
            err, TM_LIMIT, TM_NO_OFFSET,
            "%sthe files opened before this one left %" PRIu64 " bytes of TM_HTTP_HEAD_LIMIT "
            "(%" PRIu64 " bytes of header for all the files of a model together), less than "
            "a first request of %" PRIu64 "; download the model, or raise the limit",
            r->shown, (uint64_t)head_left(r), (uint64_t)r->head_limit, (uint64_t)first);
    if (st == TM_OK)
        st = fetch_first(s, url, first, err);
    r->budget->spent += r->bytes;
    if (r->budget->files_to_open)
        r->budget->files_to_open--;
    if (st != TM_OK) {
        http_close(s);
        return st;
    }
    s->ops = &http_ops;
    return TM_OK;
}

#endif /* TM_HAVE_CURL */
