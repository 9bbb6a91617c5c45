/* Remote files: the tool against a real HTTP server on 127.0.0.1 (tests/support/http_server.py, started
 * for each test and stopped after it). The server logs every request with the body bytes it
 * wrote, so the bounds on what a command transfers are checked against what went over the
 * wire, not against what the tool says it fetched. Expected values come from the corpus
 * (ggml's decoded values), from the local file through the same command, or are worked out
 * here by hand (the sizes of a header written here). Nothing leaves the machine: the proxy
 * variables are cleared, HF_ENDPOINT always points at the local server, and the one test of
 * a host that does not resolve runs under a shim whose getaddrinfo knows only localhost. */
#include "support/http_serve.h"
#include "support/st_writer.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MiB (1ull << 20)
#define CHUNK (2 * MiB) /* the first request, and each further step of the header walk */

/* ---- the server (tests/support/http_serve.c) ------------------------------------------------------ */

static server plain, secure;
static char root[256];

static void mkdirs(const char *path)
{
    char p[512];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0700);
            *s = '/';
        }
    cr_assert(mkdir(p, 0700) == 0 || errno == EEXIST, "mkdir %s", p);
}

static void suite_init(void)
{
    clean_environment();
    snprintf(root, sizeof root, "%s/root", test_dir());
    mkdirs(root);
    char *failed = server_try_start(&plain, root, "plain", NULL, NULL);
    if (failed) { /* Criterion runs no .fini after a failed .init: clean up here */
        test_cleanup();
        cr_assert_fail("%s", failed);
    }
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d", plain.port);
    setenv("HF_ENDPOINT", endpoint, 1); /* never the real Hub */
}

static void suite_fini(void)
{
    server_stop(&plain);
    server_stop(&secure);
    test_cleanup();
}

TestSuite(http, .init = suite_init, .fini = suite_fini, .timeout = 60);

/* "http://127.0.0.1:PORT/PATH" (static storage, 8 slots in turn). */
static const char *url_of(const server *s, const char *host, const char *path)
{
    static char urls[8][512];
    static int next;
    char *u = urls[next++ % 8];
    snprintf(u, sizeof urls[0], "%s://%s:%d/%s", s->tls ? "https" : "http", host, s->port, path);
    return u;
}

static const char *url(const char *path) { return url_of(&plain, "127.0.0.1", path); }

/* ---- the server's log ------------------------------------------------------------------------ */

static void quiet(void) { server_quiet(&plain); }

/* Where the log ends now: the requests of the next command start there. */
static size_t log_mark(void) { return server_log_mark(&plain); }

/* The requests logged since mark, as an array of objects. */
static json_t *log_since(size_t mark)
{
    quiet();
    json_t *all = json_array();
    struct stat st;
    if (stat(plain.log, &st) != 0)
        return all;
    size_t len;
    char *text = read_all(plain.log, &len);
    cr_assert_leq(mark, len);
    for (char *line = strtok(text + mark, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t e;
        json_t *j = json_loads(line, 0, &e);
        cr_assert_not_null(j, "a log line is not JSON (%s): %s", e.text, line);
        json_array_append_new(all, j);
    }
    free(text);
    return all;
}

typedef struct traffic {
    uint64_t bytes, requests;
} traffic;

static traffic total(const json_t *log)
{
    traffic t = {0, 0};
    size_t i;
    json_t *e;
    json_array_foreach(log, i, e)
    {
        t.bytes += json_u64(e, "bytes");
        t.requests++;
    }
    return t;
}

static const char *str_of(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* The first byte a logged request asked for ("bytes=A-B"); false when it asked for no range. */
static bool range_first(const json_t *e, uint64_t *first, uint64_t *last)
{
    unsigned long long a, b;
    if (sscanf(str_of(e, "range"), "bytes=%llu-%llu", &a, &b) != 2)
        return false;
    *first = a;
    *last = b;
    return true;
}

static char *log_text(const json_t *log) { return json_dumps(log, JSON_INDENT(1)); }

/* ---- files to serve -------------------------------------------------------------------------- */

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

static const char *corpus_file(const char *name)
{
    static char paths[4][512];
    static int next;
    const char *corpus = getenv("TM_CORPUS");
    cr_assert_not_null(corpus, "TM_CORPUS is not set (run the tests through make)");
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/golden/%s", corpus, name);
    return p;
}

/* A copy of the corpus file golden under ROOT/rel (the corpus itself is never served). */
static const char *serve_golden(const char *golden, const char *rel)
{
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", root, rel);
    char dir[512];
    snprintf(dir, sizeof dir, "%s", p);
    *strrchr(dir, '/') = '\0';
    mkdirs(dir);
    size_t n;
    char *bytes = read_all(corpus_file(golden), &n);
    write_file(p, bytes, n);
    free(bytes);
    return p;
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s", path);
    return (uint64_t)st.st_size;
}

/* A tensor of a golden file as ggml's view of it (golden-X.view.tsv) places it: its offset from
 * the data start and its size, and the data start; and where ggml's decoded values are
 * (golden-X.tsv): offset in golden-X.f32 and count. */
typedef struct golden_tensor {
    uint64_t data_offset, offset, size, f32_offset, n_values;
} golden_tensor;

static golden_tensor golden_find(const char *which, const char *tensor)
{
    golden_tensor g = {0, 0, 0, 0, 0};
    char name[64];
    snprintf(name, sizeof name, "golden-%s.view.tsv", which);
    char *view = read_all(corpus_file(name), NULL);
    bool found = false;
    for (char *line = strtok(view, "\n"); line; line = strtok(NULL, "\n")) {
        char tname[128];
        unsigned long long v, off, size;
        if (sscanf(line, "data_offset %llu", &v) == 1)
            g.data_offset = v;
        else if (sscanf(line, "tensor %127s %*s %*s %*s %*s %*s %llu %llu", tname, &off,
                        &size) == 3 &&
                 strcmp(tname, tensor) == 0) {
            g.offset = off;
            g.size = size;
            found = true;
        }
    }
    free(view);
    cr_assert(found && g.data_offset > 0, "%s: no tensor %s", name, tensor);
    snprintf(name, sizeof name, "golden-%s.tsv", which);
    char *tsv = read_all(corpus_file(name), NULL);
    found = false;
    for (char *line = strtok(tsv, "\n"); line; line = strtok(NULL, "\n")) {
        char tname[128];
        unsigned long long off, n;
        if (sscanf(line, "%127s %*s %*s %*s %*s %*s %*s %llu %llu", tname, &off, &n) == 3 &&
            strcmp(tname, tensor) == 0) {
            g.f32_offset = off;
            g.n_values = n;
            found = true;
        }
    }
    free(tsv);
    cr_assert(found, "%s: no tensor %s", name, tensor);
    return g;
}

/* ggml's decoded values of a golden tensor (malloc'ed). */
static float *golden_values(const char *which, const golden_tensor *g)
{
    char name[64];
    snprintf(name, sizeof name, "golden-%s.f32", which);
    size_t n;
    char *all = read_all(corpus_file(name), &n);
    cr_assert_leq(g->f32_offset + g->n_values * 4, n);
    float *v = malloc(g->n_values * 4);
    memcpy(v, all + g->f32_offset, g->n_values * 4);
    free(all);
    return v;
}

/* ---- a 7B-shaped model with a real vocabulary-sized header ----------------------------------- */

/* Qwen2-7B's tensors (as tests/test_cli_model.c lays them out: 28 blocks, width 3584, KV 512,
 * feed-forward 18944, vocabulary 152064, q4_K matrices, f32 norms and biases) with a tokenizer
 * of 150,000 tokens, so that the header is several megabytes, as a real 7B header is; the data
 * are a hole, 4.3 GB on paper. Its header size is worked out here field by field. */
enum { H = 3584, V = 152064, FF = 18944, L = 28, KV = 512, N_TOK = 150000 };

static void ok(tm_status s, const tm_error *err) { cr_assert_eq(s, TM_OK, "%s", err->message); }

/* GGUF sizes, by the format: a string is 8 + its bytes; an entry is its key, a u32 type, the
 * value; an array value is a u32 element type, a u64 count, the elements; a tensor info is its
 * name, a u32 n_dims, 8 bytes per dimension, a u32 type, a u64 offset. */
static uint64_t gstr(size_t len) { return 8 + len; }
static uint64_t kv_head(const char *key) { return gstr(strlen(key)) + 4; }
static uint64_t info_size(const char *name, uint64_t n_dims)
{
    return gstr(strlen(name)) + 4 + 8 * n_dims + 4 + 8;
}

typedef struct big_model {
    const char *path;
    uint64_t data_start;        /* worked out by hand */
    uint64_t q_offset, q_bytes; /* blk.0.attn_q.weight: offset from the data start, size */
} big_model;

/* q4_K: 256 weights in 144 bytes */
static uint64_t q4k_bytes(uint64_t row, uint64_t rows) { return row / 256 * 144 * rows; }

static big_model write_7b(const char *rel)
{
    big_model m;
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    m.path = path;
    tm_writer *w;
    tm_error err;
    ok(tm_writer_new(&w, &err), &err);
    uint64_t h = 24; /* "GGUF", version, tensor count, entry count */
    ok(tm_writer_kv_str(w, "general.architecture", "qwen2", 5, &err), &err);
    h += kv_head("general.architecture") + gstr(5);
    static const struct {
        const char *key;
        uint32_t v;
    } u32s[] = {{"qwen2.block_count", L},
                {"qwen2.context_length", 32768},
                {"qwen2.embedding_length", H},
                {"qwen2.feed_forward_length", FF},
                {"qwen2.attention.head_count", 28},
                {"qwen2.attention.head_count_kv", 4}};
    for (size_t i = 0; i < sizeof u32s / sizeof u32s[0]; i++) {
        ok(tm_writer_kv_scalar(w, u32s[i].key, TM_V_U32, &u32s[i].v, &err), &err);
        h += kv_head(u32s[i].key) + 4;
    }
    char **toks = malloc(N_TOK * sizeof *toks);
    float *scores = malloc(N_TOK * sizeof *scores);
    int32_t *types = malloc(N_TOK * sizeof *types);
    uint64_t tok_bytes = 0;
    for (int i = 0; i < N_TOK; i++) {
        char t[64];
        int n = snprintf(t, sizeof t, "tok%06d_%.*s", i, i % 41, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP");
        toks[i] = strdup(t);
        tok_bytes += gstr((size_t)n);
        scores[i] = -(float)i;
        types[i] = 1;
    }
    ok(tm_writer_kv_str_array(w, "tokenizer.ggml.tokens", (const char *const *)toks, NULL, N_TOK,
                              &err),
       &err);
    h += kv_head("tokenizer.ggml.tokens") + 4 + 8 + tok_bytes;
    ok(tm_writer_kv_array(w, "tokenizer.ggml.scores", TM_V_F32, scores, N_TOK, &err), &err);
    h += kv_head("tokenizer.ggml.scores") + 4 + 8 + 4ull * N_TOK;
    ok(tm_writer_kv_array(w, "tokenizer.ggml.token_type", TM_V_I32, types, N_TOK, &err), &err);
    h += kv_head("tokenizer.ggml.token_type") + 4 + 8 + 4ull * N_TOK;
    for (int i = 0; i < N_TOK; i++)
        free(toks[i]);
    free(toks);
    free(scores);
    free(types);

    uint64_t offset = 0; /* tensors in order, each starting at a multiple of 32 */
    m.q_offset = m.q_bytes = 0;
#define T(name, type, bytes, ...)                                                                  \
    do {                                                                                           \
        const uint64_t ne[] = {__VA_ARGS__};                                                       \
        const uint64_t nd = sizeof ne / sizeof ne[0];                                            \
        ok(tm_writer_tensor(w, name, type, (uint32_t)nd, ne, NULL, &err), &err);                \
        h += info_size(name, nd);                                                                  \
        if (strcmp(name, "blk.0.attn_q.weight") == 0)                                              \
            m.q_offset = offset, m.q_bytes = (bytes);                                              \
        offset = (offset + (bytes) + 31) / 32 * 32;                                                \
    } while (0)
    T("token_embd.weight", TM_TYPE_Q4_K, q4k_bytes(H, V), H, V);
    for (int b = 0; b < L; b++) {
        char n[64];
#define B(what, type, bytes, ...)                                                                  \
    do {                                                                                           \
        snprintf(n, sizeof n, "blk.%d." what, b);                                                  \
        T(n, type, bytes, __VA_ARGS__);                                                            \
    } while (0)
        B("attn_norm.weight", TM_TYPE_F32, 4ull * H, H);
        B("attn_q.weight", TM_TYPE_Q4_K, q4k_bytes(H, H), H, H);
        B("attn_q.bias", TM_TYPE_F32, 4ull * H, H);
        B("attn_k.weight", TM_TYPE_Q4_K, q4k_bytes(H, KV), H, KV);
        B("attn_k.bias", TM_TYPE_F32, 4ull * KV, KV);
        B("attn_v.weight", TM_TYPE_Q4_K, q4k_bytes(H, KV), H, KV);
        B("attn_v.bias", TM_TYPE_F32, 4ull * KV, KV);
        B("attn_output.weight", TM_TYPE_Q4_K, q4k_bytes(H, H), H, H);
        B("ffn_norm.weight", TM_TYPE_F32, 4ull * H, H);
        B("ffn_gate.weight", TM_TYPE_Q4_K, q4k_bytes(H, FF), H, FF);
        B("ffn_up.weight", TM_TYPE_Q4_K, q4k_bytes(H, FF), H, FF);
        B("ffn_down.weight", TM_TYPE_Q4_K, q4k_bytes(FF, H), FF, H);
#undef B
    }
    T("output_norm.weight", TM_TYPE_F32, 4ull * H, H);
    T("output.weight", TM_TYPE_Q4_K, q4k_bytes(H, V), H, V);
#undef T
    ok(tm_writer_finish(w, path, &err), &err);
    m.data_start = (h + 31) / 32 * 32;
    cr_assert_gt(m.data_start, 6 * MiB, "the header should be a 7B's, ~6 MB: %llu",
                 (unsigned long long)m.data_start);
    cr_assert_gt(file_size(path), 4000 * MiB);
    return m;
}

/* blk.0.attn_q.weight's bytes: ggml's 96 random q4_K blocks (golden-a's q4_K.raw_blocks) over
 * and over. Returns ggml's decoded values of those 96 blocks (96 x 256 floats, malloc'ed). */
static float *plant_q4k(const big_model *m)
{
    golden_tensor g = golden_find("a", "q4_K.raw_blocks");
    cr_assert_eq(g.size, 96 * 144);
    cr_assert_eq(g.n_values, 96 * 256);
    size_t n;
    char *golden = read_all(corpus_file("golden-a.gguf"), &n);
    cr_assert_leq(g.data_offset + g.offset + g.size, n);
    char *blocks = malloc(m->q_bytes);
    for (uint64_t b = 0; b < m->q_bytes / 144; b++)
        memcpy(blocks + b * 144, golden + g.data_offset + g.offset + (b % 96) * 144, 144);
    free(golden);
    int fd = open(m->path, O_WRONLY);
    cr_assert_geq(fd, 0);
    cr_assert_eq(pwrite(fd, blocks, m->q_bytes, (off_t)(m->data_start + m->q_offset)),
                 (ssize_t)m->q_bytes);
    cr_assert_eq(close(fd), 0);
    free(blocks);
    return golden_values("a", &g);
}

/* ---- running the tool -------------------------------------------------------------------------- */

static void expect_fails(tool_result *r, const char *words, const char *also)
{
    cr_expect_eq(r->status, 1, "exit %d (expected 1); stderr: %s", r->status, r->err);
    cr_expect(strstr(r->err, words), "stderr lacks \"%s\": %s", words, r->err);
    if (also)
        cr_expect(strstr(r->err, also), "stderr lacks \"%s\": %s", also, r->err);
}

/* The .npy written by dump: the header checked, the float32 payload returned. */
static float *read_npy(const char *path, size_t *n_values, char *shape, size_t shape_cap)
{
    size_t len;
    char *b = read_all(path, &len);
    cr_assert_geq(len, 10);
    cr_assert_eq(memcmp(b, "\x93NUMPY\x01\x00", 8), 0, "not an npy 1.0 file");
    size_t hlen = (size_t)(unsigned char)b[8] | (size_t)(unsigned char)b[9] << 8;
    cr_assert_leq(10 + hlen, len);
    char *h = strndup(b + 10, hlen);
    cr_assert(strstr(h, "'descr': '<f4'"), "%s", h);
    char *s = strstr(h, "'shape': (");
    cr_assert_not_null(s, "%s", h);
    snprintf(shape, shape_cap, "%.*s", (int)(strchr(s, ')') - (s + 10)), s + 10);
    free(h);
    *n_values = (len - 10 - hlen) / 4;
    float *v = malloc(*n_values * 4 + 4);
    memcpy(v, b + 10 + hlen, *n_values * 4);
    free(b);
    return v;
}

/* info --json on the local file and on the URL agree on everything but the path, the
 * fetched counts and (for a set of shards) the shards' paths. */
static void json_same_but(json_t *local, json_t *remote)
{
    json_object_del(local, "path");
    json_object_del(remote, "path");
    json_object_del(remote, "fetched");
    json_t *ls = json_object_get(local, "shards"), *rs = json_object_get(remote, "shards");
    size_t i;
    json_t *e;
    json_array_foreach(ls, i, e) json_object_del(e, "path");
    json_array_foreach(rs, i, e) json_object_del(e, "path");
    char *a = json_dumps(local, JSON_SORT_KEYS), *b = json_dumps(remote, JSON_SORT_KEYS);
    cr_assert_str_eq(a, b, "the local file and the URL disagree");
    free(a);
    free(b);
}

/* ==== the server itself ============================================================================ */

/* One HTTP/1.0 request to the plain server, the whole answer back (malloc'ed, *len bytes). */
static char *raw_request(const char *request, size_t *len)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)plain.port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "connect: %s", strerror(errno));
    cr_assert_eq(write(fd, request, strlen(request)), (ssize_t)strlen(request));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (ssize_t got; (got = read(fd, buf + n, cap - n)) > 0;) {
        n += (size_t)got;
        if (n == cap)
            buf = realloc(buf, (cap *= 2) + 1);
    }
    close(fd);
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* GET path with an optional Range header: the status, a header's value (if asked), the body. */
static int raw_get(const char *method, const char *path, const char *range, const char *header,
                   char *value, size_t value_cap, char **body, size_t *body_len)
{
    char req[512];
    snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n%s%s%s\r\n", method,
             path, plain.port, range ? "Range: " : "", range ? range : "", range ? "\r\n" : "");
    size_t n;
    char *r = raw_request(req, &n);
    int status = 0;
    cr_assert_eq(sscanf(r, "HTTP/1.%*d %d", &status), 1, "%.200s", r);
    char *end = strstr(r, "\r\n\r\n");
    cr_assert_not_null(end);
    if (header) {
        value[0] = '\0';
        char want[64];
        snprintf(want, sizeof want, "\r\n%s: ", header);
        char *h = strstr(r, want);
        if (h && h < end) {
            h += strlen(want);
            snprintf(value, value_cap, "%.*s", (int)(strstr(h, "\r\n") - h), h);
        }
    }
    *body_len = n - (size_t)(end + 4 - r);
    *body = malloc(*body_len + 1);
    memcpy(*body, end + 4, *body_len);
    free(r);
    return status;
}

/* The server's ranges, checked against the file here (the tool's tests lean on them). */
Test(http, the_test_server_answers_ranges_as_rfc_9110_says)
{
    const char *path = serve_golden("golden-a.gguf", "golden-a.gguf");
    size_t size;
    char *file = read_all(path, &size);
    cr_assert_eq(size, 293856);
    static const struct {
        const char *range;
        int status;
        uint64_t first, last; /* the bytes sent */
    } cases[] = {{NULL, 200, 0, 293855},
                 {"bytes=10-19", 206, 10, 19},
                 {"bytes=293850-", 206, 293850, 293855},
                 {"bytes=-100", 206, 293756, 293855},
                 {"bytes=0-999999999", 206, 0, 293855},
                 {"bytes=293856-", 416, 0, 0},
                 {"bytes=9-3", 200, 0, 293855}, /* not a range: ignored */
                 {"bytes=0-1,5-6", 200, 0, 293855}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char cr[128], *body;
        size_t n;
        int st = raw_get("GET", "/files/golden-a.gguf", cases[k].range, "Content-Range", cr,
                         sizeof cr, &body, &n);
        const char *what = cases[k].range ? cases[k].range : "no range";
        cr_assert_eq(st, cases[k].status, "%s: HTTP %d", what, st);
        if (st == 416) {
            cr_assert_str_eq(cr, "bytes */293856", "%s", what);
        } else {
            const uint64_t len = cases[k].last - cases[k].first + 1;
            cr_assert_eq(n, len, "%s: %zu bytes", what, n);
            cr_assert_eq(memcmp(body, file + cases[k].first, n), 0, "%s: other bytes", what);
            if (st == 206) {
                char want[128];
                snprintf(want, sizeof want, "bytes %llu-%llu/293856",
                         (unsigned long long)cases[k].first, (unsigned long long)cases[k].last);
                cr_assert_str_eq(cr, want, "%s", what);
            }
        }
        free(body);
    }
    /* HEAD: the headers, no body; the ETag stays while the file does */
    char etag[128], etag2[128], *body;
    size_t n;
    cr_assert_eq(raw_get("HEAD", "/files/golden-a.gguf", NULL, "ETag", etag, sizeof etag, &body,
                         &n), 200);
    cr_assert_eq(n, 0);
    cr_assert_neq(etag[0], '\0');
    free(body);
    cr_assert_eq(raw_get("GET", "/norange/golden-a.gguf", "bytes=0-9", "ETag", etag2,
                         sizeof etag2, &body, &n), 200);
    cr_assert_eq(n, size, "/norange/ sends the whole file");
    cr_assert_str_eq(etag, etag2);
    free(body);
    cr_assert_eq(raw_get("GET", "/files/../golden-a.gguf", NULL, NULL, NULL, 0, &body, &n), 404);
    free(body);
    free(file);
}

/* ==== header-only commands: the transfer bound ==================================================== */

/* info, tensors, meta, check on the 7B-shaped file: at most the header plus one chunk goes
 * over the wire, by the server's count; info's own count of what it fetched is the server's. */
Test(http, header_commands_on_a_7b_file_transfer_the_header_and_at_most_one_chunk_more)
{
    big_model m = write_7b("qwen2-7b.gguf");
    /* the header size worked out by hand is the library's too (on the local file) */
    json_t *local = tool_json(0, "check", "--json", m.path, NULL);
    cr_assert_eq(json_u64(local, "data_start"), m.data_start);
    json_decref(local);

    const char *u = url("files/qwen2-7b.gguf");
    static const char *const cmds[] = {"info", "tensors", "meta", "check", "header", "bytes",
                                       "stack"};
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        size_t mark = log_mark();
        tool_result r = tool_run(cmds[c], u, NULL);
        cr_assert_eq(r.status, 0, "%s: %s", cmds[c], r.err);
        json_t *log = log_since(mark);
        traffic t = total(log);
        char *text = log_text(log);
        cr_assert_geq(t.bytes, m.data_start, "%s read less than the header:\n%s", cmds[c], text);
        cr_assert_leq(t.bytes, m.data_start + CHUNK,
                      "%s: %llu bytes over the wire for a header of %llu:\n%s", cmds[c],
                      (unsigned long long)t.bytes, (unsigned long long)m.data_start, text);
        /* the first request is a range of the first 2 MiB */
        const json_t *first = json_array_get(log, 0);
        cr_assert_str_eq(str_of(first, "range"), "bytes=0-2097151", "%s:\n%s", cmds[c], text);
        cr_assert_eq(json_u64(first, "status"), 206);
        free(text);
        json_decref(log);
        tool_result_free(&r);
    }

    /* info --json: "fetched" is what the server sent, request for request */
    size_t mark = log_mark();
    json_t *j = tool_json(0, "info", "--json", u, NULL);
    json_t *log = log_since(mark);
    traffic t = total(log);
    const json_t *fetched = json_object_get(j, "fetched");
    cr_assert_not_null(fetched, "info --json has no \"fetched\"");
    cr_assert_eq(json_u64(fetched, "bytes"), t.bytes);
    cr_assert_eq(json_u64(fetched, "requests"), t.requests);
    cr_assert_eq(json_u64(j, "file_size"), file_size(m.path));
    cr_assert_eq(json_u64(j, "parameters"), 7615616512ull); /* test_cli_model.c's, by hand */
    json_decref(log);
    json_t *l = tool_json(0, "info", "--json", m.path, NULL);
    json_same_but(l, j);
    json_decref(l);
    json_decref(j);

    /* the text says it too: a line "fetched ... in K requests" */
    tool_result r = tool_run("info", u, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *line = strstr(r.out, "\n  fetched");
    cr_assert_not_null(line, "no 'fetched' line:\n%s", r.out);
    char want[64];
    snprintf(want, sizeof want, "in %llu requests", (unsigned long long)t.requests);
    cr_assert(strstr(line, want), "the fetched line lacks \"%s\":\n%s", want, r.out);
    tool_result_free(&r);
}

/* A local file's info has no "fetched". */
Test(http, a_local_file_says_nothing_fetched)
{
    json_t *j = tool_json(0, "info", "--json", corpus_file("golden-a.gguf"), NULL);
    cr_assert_null(json_object_get(j, "fetched"));
    json_decref(j);
}

/* ==== tensor data ================================================================================== */

/* dump over HTTP fetches the tensor's byte range and nothing else of the data: 7.2 MB of
 * ggml's q4_K blocks planted in the 7B file's hole come out as ggml decoded them, bit for bit,
 * and as the local file's dump does. */
Test(http, dump_fetches_only_the_tensor_and_decodes_it_as_ggml_does)
{
    big_model m = write_7b("qwen2-7b.gguf");
    float *ref = plant_q4k(&m);
    const char *u = url("files/qwen2-7b.gguf");
    const char *out = test_path("remote.npy"), *local_out = test_path("local.npy");
    size_t mark = log_mark();
    tool_result r = tool_run("dump", u, "blk.0.attn_q.weight", "-o", out, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    json_t *log = log_since(mark);
    char *text = log_text(log);

    const uint64_t t0 = m.data_start + m.q_offset, t1 = t0 + m.q_bytes;
    uint64_t head = 0, data = 0;
    size_t i;
    json_t *e;
    json_array_foreach(log, i, e)
    {
        uint64_t a, b;
        cr_assert(range_first(e, &a, &b), "a request without a range:\n%s", text);
        cr_assert_eq(json_u64(e, "status"), 206, "%s", text);
        if (a < m.data_start) {
            head += json_u64(e, "bytes");
        } else {
            cr_assert(a >= t0 && b < t1, "bytes %llu-%llu are not the tensor's (%llu-%llu):\n%s",
                      (unsigned long long)a, (unsigned long long)b, (unsigned long long)t0,
                      (unsigned long long)(t1 - 1), text);
            data += json_u64(e, "bytes");
        }
    }
    cr_assert_leq(head, m.data_start + CHUNK, "%s", text);
    cr_assert_geq(data, m.q_bytes, "the tensor's bytes did not all come:\n%s", text);
    cr_assert_leq(data, m.q_bytes + 64 * 1024, "%llu bytes of data for a %llu-byte tensor:\n%s",
                  (unsigned long long)data, (unsigned long long)m.q_bytes, text);
    free(text);
    json_decref(log);

    size_t n;
    char shape[64];
    float *got = read_npy(out, &n, shape, sizeof shape);
    cr_assert_str_eq(shape, "3584, 3584");
    cr_assert_eq(n, (size_t)H * H);
    for (size_t k = 0; k < n; k++) /* block k / 256 holds raw block (k / 256) % 96 */
        if (memcmp(&got[k], &ref[(k / 256 % 96) * 256 + k % 256], 4) != 0)
            cr_assert_fail("value %zu: %a, ggml decoded %a", k, (double)got[k],
                           (double)ref[(k / 256 % 96) * 256 + k % 256]);
    r = tool_run("dump", m.path, "blk.0.attn_q.weight", "-o", local_out, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    size_t n_local;
    char *a = read_all(out, &n), *b = read_all(local_out, &n_local);
    cr_assert_eq(n, n_local);
    cr_assert_eq(memcmp(a, b, n), 0, "the URL's dump differs from the local file's");
    free(a);
    free(b);
    free(got);
    free(ref);
}

/* stats over HTTP: the same numbers as on the local file, and only the tensor's bytes. */
Test(http, stats_matches_the_local_file_and_fetches_only_the_tensor)
{
    big_model m = write_7b("qwen2-7b.gguf");
    free(plant_q4k(&m));
    const char *u = url("files/qwen2-7b.gguf");
    size_t mark = log_mark();
    json_t *remote = tool_json(0, "stats", "--json", u, "blk.0.attn_q.weight", NULL);
    json_t *log = log_since(mark);
    traffic t = total(log);
    char *text = log_text(log);
    cr_assert_leq(t.bytes, m.data_start + CHUNK + m.q_bytes + 64 * 1024,
                  "%llu bytes in %llu requests for a header of %llu and a tensor of %llu:\n%s",
                  (unsigned long long)t.bytes, (unsigned long long)t.requests,
                  (unsigned long long)m.data_start, (unsigned long long)m.q_bytes, text);
    free(text);
    json_decref(log);
    json_t *local = tool_json(0, "stats", "--json", m.path, "blk.0.attn_q.weight", NULL);
    char *a = json_dumps(local, JSON_SORT_KEYS), *b = json_dumps(remote, JSON_SORT_KEYS);
    cr_assert_str_eq(a, b);
    free(a);
    free(b);
    json_decref(local);
    json_decref(remote);
}

/* Every tensor of golden-a over HTTP is what ggml decoded, bit for bit (dump --all). */
Test(http, dump_all_of_a_golden_file_over_http_is_what_ggml_decoded)
{
    serve_golden("golden-a.gguf", "golden-a.gguf");
    char dir[256];
    snprintf(dir, sizeof dir, "%s", test_path("all"));
    tool_result r =
        tool_run("dump", "--all", "--format", "raw", url("files/golden-a.gguf"), "-o", dir, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    size_t n_ref;
    char *ref = read_all(corpus_file("golden-a.f32"), &n_ref);
    char *lines = read_all(corpus_file("golden-a.tsv"), NULL);
    unsigned compared = 0;
    for (char *line = strtok(lines, "\n"); line; line = strtok(NULL, "\n")) {
        char name[128];
        unsigned long long off, n;
        if (sscanf(line, "%127s %*s %*s %*s %*s %*s %*s %llu %llu", name, &off, &n) != 3)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s.f32", dir, name);
        if (access(path, F_OK) != 0)
            continue; /* a type without a decoder: the local test says which */
        size_t len;
        char *got = read_all(path, &len);
        cr_assert_eq(len, n * 4, "%s", name);
        cr_assert_leq(off + len, n_ref);
        cr_assert_eq(memcmp(got, ref + off, len), 0, "%s differs from ggml's values", name);
        free(got);
        compared++;
    }
    cr_assert_geq(compared, 2 * 13, "only %u tensors were dumped", compared);
    free(ref);
    free(lines);
}

/* compare URL FILE: the same file on both sides, every tensor exact. */
Test(http, compare_a_url_with_the_local_copy)
{
    const char *local = serve_golden("golden-b.gguf", "golden-b.gguf");
    json_t *j = tool_json(0, "compare", "--json", url("files/golden-b.gguf"), local, NULL);
    const json_t *s = json_object_get(j, "summary");
    if (!s)
        s = j;
    cr_assert(json_is_true(json_object_get(s, "match")), "%s", json_dumps(j, 0));
    cr_assert_eq(json_u64(s, "differing"), 0);
    cr_assert_eq(json_u64(s, "pairs"), 58);
    cr_assert_eq(json_u64(s, "exact") + json_u64(s, "errors"), 58);
    cr_assert_geq(json_u64(s, "exact"), 2 * 13);
    json_decref(j);
}

/* ==== Hugging Face paths ========================================================================== */

static void write_token(const char *token)
{
    char p[512];
    snprintf(p, sizeof p, "%s/hf", root);
    mkdirs(p);
    snprintf(p, sizeof p, "%s/hf/token", root);
    write_file(p, token, strlen(token));
}

/* hf:OWNER/REPO/FILE goes to $HF_ENDPOINT/OWNER/REPO/resolve/main/FILE, follows the redirect
 * to the CDN, and reads there; @REV picks the revision. */
Test(http, hf_paths_resolve_through_hf_endpoint_and_follow_the_cdn_redirect)
{
    serve_golden("golden-a.gguf", "hf/tm-test/tiny/main/model.gguf");
    serve_golden("golden-b.gguf", "hf/tm-test/tiny/v2/model.gguf");
    size_t mark = log_mark();
    json_t *j = tool_json(0, "info", "--json", "hf:tm-test/tiny/model.gguf", NULL);
    json_t *log = log_since(mark);
    char *text = log_text(log);
    cr_assert_str_eq(str_of(json_array_get(log, 0), "path"), "/tm-test/tiny/resolve/main/model.gguf",
                     "%s", text);
    cr_assert_eq(json_u64(json_array_get(log, 0), "status"), 302, "%s", text);
    cr_assert_str_eq(str_of(json_array_get(log, 1), "path"), "/cdn/tm-test/tiny/main/model.gguf",
                     "%s", text);
    cr_assert_eq(json_u64(j, "file_size"), file_size(corpus_file("golden-a.gguf")));
    /* fetched counts the file's bytes, with or without the redirect's few */
    uint64_t file_bytes = 0;
    size_t i;
    json_t *e;
    json_array_foreach(log, i, e) file_bytes += json_u64(e, "status") == 302 ? 0 : json_u64(e, "bytes");
    const uint64_t fetched = json_u64(json_object_get(j, "fetched"), "bytes");
    cr_assert(fetched == file_bytes || fetched == total(log).bytes,
              "fetched %llu bytes, the server sent %llu of the file:\n%s",
              (unsigned long long)fetched, (unsigned long long)file_bytes, text);
    free(text);
    json_decref(log);
    json_t *l = tool_json(0, "info", "--json", corpus_file("golden-a.gguf"), NULL);
    json_same_but(l, j);
    json_decref(l);
    json_decref(j);

    mark = log_mark();
    j = tool_json(0, "info", "--json", "hf:tm-test/tiny/model.gguf@v2", NULL);
    log = log_since(mark);
    cr_assert_str_eq(str_of(json_array_get(log, 0), "path"), "/tm-test/tiny/resolve/v2/model.gguf");
    cr_assert_eq(json_u64(j, "file_size"), file_size(corpus_file("golden-b.gguf")));
    json_decref(log);
    json_decref(j);

    /* a file the repository does not have */
    tool_result r = tool_run("info", "hf:tm-test/tiny/nope.gguf", NULL);
    expect_fails(&r, "HTTP 404", NULL);
    tool_result_free(&r);
}

/* A private repository: no token 401, a wrong one 403, each naming HF_TOKEN; the right one is
 * sent on the resolve request and opens the file. */
Test(http, a_private_repository_wants_hf_token)
{
    serve_golden("golden-a.gguf", "hf/tm-test/private-tiny/main/model.gguf");
    write_token("hf_local_test_token");
    tool_result r = tool_run("info", "hf:tm-test/private-tiny/model.gguf", NULL);
    expect_fails(&r, "HTTP 401", "HF_TOKEN");
    tool_result_free(&r);

    setenv("HF_TOKEN", "hf_wrong", 1);
    r = tool_run("tensors", "hf:tm-test/private-tiny/model.gguf", NULL);
    expect_fails(&r, "HTTP 403", "HF_TOKEN");
    tool_result_free(&r);

    setenv("HF_TOKEN", "hf_local_test_token", 1);
    size_t mark = log_mark();
    json_t *j = tool_json(0, "info", "--json", "hf:tm-test/private-tiny/model.gguf", NULL);
    cr_assert_eq(json_u64(j, "file_size"), file_size(corpus_file("golden-a.gguf")));
    json_decref(j);
    json_t *log = log_since(mark);
    char *text = log_text(log);
    const json_t *first = json_array_get(log, 0);
    cr_assert_str_eq(str_of(first, "path"), "/tm-test/private-tiny/resolve/main/model.gguf",
                     "%s", text);
    cr_assert_str_eq(str_of(first, "authorization"), "Bearer hf_local_test_token", "%s", text);
    free(text);
    json_decref(log);
}

/* The token goes to HF_ENDPOINT's host only: not to a CDN on another host (the resolve
 * redirect), nor after a redirect to another host from a plain URL. */
Test(http, the_token_does_not_follow_a_redirect_to_another_host)
{
    serve_golden("golden-a.gguf", "hf/tm-test/elsewhere-tiny/main/model.gguf");
    serve_golden("golden-a.gguf", "golden-a.gguf");
    setenv("HF_TOKEN", "hf_local_test_token", 1);
    const char *const targets[] = {"hf:tm-test/elsewhere-tiny/model.gguf",
                                   url("redirect-host/golden-a.gguf")};
    for (size_t k = 0; k < 2; k++) {
        size_t mark = log_mark();
        json_t *j = tool_json(0, "info", "--json", targets[k], NULL);
        cr_assert_eq(json_u64(j, "file_size"), file_size(corpus_file("golden-a.gguf")));
        json_decref(j);
        json_t *log = log_since(mark);
        char *text = log_text(log);
        size_t i, elsewhere = 0, with_token = 0;
        json_t *e;
        json_array_foreach(log, i, e)
        {
            if (strncmp(str_of(e, "host"), "localhost:", 10) == 0) {
                elsewhere++;
                cr_assert(json_is_null(json_object_get(e, "authorization")),
                          "%s: the token reached another host:\n%s", targets[k], text);
            } else {
                const json_t *a = json_object_get(e, "authorization");
                with_token += json_is_string(a) &&
                              strcmp(json_string_value(a), "Bearer hf_local_test_token") == 0;
            }
        }
        cr_assert_geq(elsewhere, 1, "%s: nothing was read from the other host:\n%s", targets[k],
                      text);
        /* the resolve request itself carried it (the server logs a request when its answer is
         * done, so the redirect need not be the first line) */
        if (k == 0)
            cr_assert_geq(with_token, 1, "%s: the endpoint never got the token:\n%s",
                          targets[k], text);
        free(text);
        json_decref(log);
    }
}

/* ==== redirects, retries ========================================================================== */

Test(http, a_redirect_is_followed)
{
    serve_golden("golden-a.gguf", "golden-a.gguf");
    size_t mark = log_mark();
    json_t *j = tool_json(0, "info", "--json", url("redirect/golden-a.gguf"), NULL);
    json_t *log = log_since(mark);
    cr_assert_eq(json_u64(json_array_get(log, 0), "status"), 302);
    cr_assert_str_eq(str_of(json_array_get(log, 1), "path"), "/files/golden-a.gguf");
    json_t *l = tool_json(0, "info", "--json", corpus_file("golden-a.gguf"), NULL);
    json_same_but(l, j);
    json_decref(l);
    json_decref(j);
    json_decref(log);
}

/* A 503 is retried: the second answer is the file. */
Test(http, a_transient_503_is_retried)
{
    serve_golden("golden-a.gguf", "golden-a.gguf");
    size_t mark = log_mark();
    json_t *j = tool_json(0, "info", "--json", url("flaky/golden-a.gguf"), NULL);
    json_t *log = log_since(mark);
    char *text = log_text(log);
    cr_assert_eq(json_u64(json_array_get(log, 0), "status"), 503, "%s", text);
    cr_assert_eq(json_u64(json_array_get(log, 1), "status"), 206, "%s", text);
    cr_assert_eq(json_u64(j, "file_size"), file_size(corpus_file("golden-a.gguf")));
    free(text);
    json_decref(log);
    json_decref(j);
}

/* ==== errors ======================================================================================== */

Test(http, a_missing_file_is_http_404)
{
    tool_result r = tool_run("info", url("files/no-such-model.gguf"), NULL);
    expect_fails(&r, "HTTP 404", NULL);
    tool_result_free(&r);
    r = tool_run("dump", url("nowhere/model.gguf"), "x", "-o", test_path("x.npy"), NULL);
    expect_fails(&r, "HTTP 404", NULL);
    tool_result_free(&r);
}

/* A tensor of 8 MiB or more is fetched as several ranges at once: the data requests for a
 * 38 MB q4_K matrix are at least four ranges that tile its bytes exactly, none outside them,
 * and stats (two passes over the values) fetches them once. */
Test(http, a_large_tensor_comes_in_several_ranges_that_tile_it_once)
{
    big_model m = write_7b("qwen2-7b.gguf");
    tm_file *f;
    tm_error err;
    ok(tm_open(m.path, 0, &f, &err), &err);
    const tm_tensor *t = tm_tensor_find(f, "blk.0.ffn_up.weight");
    cr_assert_not_null(t);
    const uint64_t t0 = m.data_start + t->offset, t1 = t0 + t->n_bytes;
    cr_assert_eq(t->n_bytes, q4k_bytes(H, FF));
    tm_close(f);
    size_t mark = log_mark();
    json_t *j = tool_json(0, "stats", "--json", url("files/qwen2-7b.gguf"), "blk.0.ffn_up.weight",
                          NULL);
    cr_assert_eq(json_real_value(json_object_get(json_array_get(j, 0), "max")), 0.0,
                 "the hole decodes as zeros");
    json_decref(j);
    json_t *log = log_since(mark);
    char *text = log_text(log);
    uint64_t firsts[64], lasts[64];
    size_t n = 0, i;
    json_t *e;
    json_array_foreach(log, i, e)
    {
        uint64_t a, b;
        cr_assert(range_first(e, &a, &b), "a request without a range:\n%s", text);
        if (a < m.data_start)
            continue; /* the header */
        cr_assert(a >= t0 && b < t1, "bytes %llu-%llu are not the tensor's:\n%s",
                  (unsigned long long)a, (unsigned long long)b, text);
        cr_assert_lt(n, 64);
        cr_assert_eq(json_u64(e, "bytes"), b - a + 1, "%s", text);
        firsts[n] = a, lasts[n++] = b;
    }
    cr_assert_geq(n, 4, "%zu data requests for %llu bytes:\n%s", n,
                  (unsigned long long)(t1 - t0), text);
    for (uint64_t at = t0; at < t1;) { /* each byte once: the range starting where we are */
        size_t k = 0;
        while (k < n && firsts[k] != at)
            k++;
        cr_assert_lt(k, n, "no range starts at byte %llu:\n%s", (unsigned long long)at, text);
        at = lasts[k] + 1;
        firsts[k] = UINT64_MAX;
    }
    for (size_t k = 0; k < n; k++)
        cr_assert_eq(firsts[k], UINT64_MAX, "a range fetched twice or overlapping:\n%s", text);
    free(text);
    json_decref(log);
}

/* The library on a remote tensor of several 16 MiB pieces (each decoded while the next one is
 * fetched): tm_dequant_tensor gives every value where it belongs, values worked out here, and
 * tm_matvec gives the local file's result bit for bit. */
Test(http, a_tensor_of_several_pieces_decodes_every_value_in_place)
{
    enum { COLS = 4096, ROWS = 2560 }; /* 40 MiB of f32: pieces of 16, 16 and 8 MiB */
    float *v = malloc(sizeof(float) * COLS * ROWS);
    cr_assert_not_null(v);
    for (size_t i = 0; i < (size_t)COLS * ROWS; i++)
        v[i] = (float)((i / COLS * 7 + i % COLS * 13) % 1009);
    char path[512];
    snprintf(path, sizeof path, "%s/pieces.gguf", root);
    tm_writer *w;
    tm_error err;
    ok(tm_writer_new(&w, &err), &err);
    const uint64_t ne[2] = {COLS, ROWS};
    ok(tm_writer_tensor(w, "w", TM_TYPE_F32, 2, ne, v, &err), &err);
    ok(tm_writer_finish(w, path, &err), &err);
    tm_file *remote, *local;
    ok(tm_open(url("files/pieces.gguf"), 0, &remote, &err), &err);
    ok(tm_open(path, 0, &local, &err), &err);
    const tm_tensor *t = tm_tensor_find(remote, "w");
    cr_assert_null(t->data, "a remote tensor has no data pointer");
    float *got = malloc(sizeof(float) * COLS * ROWS);
    cr_assert_not_null(got);
    ok(tm_dequant_tensor(t, got, 2, &err), &err);
    for (size_t i = 0; i < (size_t)COLS * ROWS; i++)
        if (got[i] != (float)((i / COLS * 7 + i % COLS * 13) % 1009))
            cr_assert_fail("value %zu (row %zu): %g", i, i / COLS, (double)got[i]);
    float x[COLS], y_remote[ROWS], y_local[ROWS];
    for (int c = 0; c < COLS; c++)
        x[c] = (float)(c % 17) - 8.0f;
    ok(tm_matvec(t, x, y_remote, TM_MATVEC_F32, 2, &err), &err);
    ok(tm_matvec(tm_tensor_find(local, "w"), x, y_local, TM_MATVEC_F32, 2, &err), &err);
    cr_assert_eq(memcmp(y_remote, y_local, sizeof y_local), 0);
    uint64_t bytes, requests;
    tm_file_fetched(remote, &bytes, &requests);
    cr_assert_geq(bytes, 2 * 4ull * COLS * ROWS, "decoded twice, fetched twice");
    tm_close(remote);
    tm_close(local);
    free(got);
    free(v);
}

/* A remote tensor of a type with no decoder (q8_K: 16 MiB of blocks) is refused by name before
 * any of its bytes is fetched, by the decoder and by the product alike. */
Test(http, a_type_without_a_decoder_is_refused_before_its_bytes_are_fetched)
{
    enum { COLS = 4096, ROWS = 14364 }; /* 292-byte blocks: 16.0 MiB */
    char path[512];
    snprintf(path, sizeof path, "%s/q8k.gguf", root);
    tm_writer *w;
    tm_error err;
    ok(tm_writer_new(&w, &err), &err);
    const uint64_t ne[2] = {COLS, ROWS};
    ok(tm_writer_tensor(w, "acts", TM_TYPE_Q8_K, 2, ne, NULL, &err), &err);
    ok(tm_writer_finish(w, path, &err), &err);
    tm_file *remote;
    ok(tm_open(url("files/q8k.gguf"), 0, &remote, &err), &err);
    uint64_t header_bytes, bytes, requests;
    tm_file_fetched(remote, &header_bytes, &requests);
    const tm_tensor *t = tm_tensor_find(remote, "acts");
    float *out = malloc(sizeof(float) * COLS), x[COLS] = {0}, y[16];
    cr_assert_not_null(out);
    /* the last row's blocks: the first ones may have come with the header */
    const uint64_t last_row = (uint64_t)(ROWS - 1) * (COLS / 256);
    cr_assert_eq(tm_dequant_blocks(t, last_row, COLS / 256, out, &err), TM_UNSUPPORTED, "%s",
                 err.message);
    cr_assert(strstr(err.message, "tensor 'acts': type q8_K has no decoder"), "%s", err.message);
    cr_assert_eq(tm_matvec_rows(t, ROWS - 16, ROWS, x, y, TM_MATVEC_F32, &err), TM_UNSUPPORTED,
                 "%s", err.message);
    tm_file_fetched(remote, &bytes, &requests);
    cr_assert_eq(bytes, header_bytes, "%llu bytes fetched past the header",
                 (unsigned long long)(bytes - header_bytes));
    tm_close(remote);
    free(out);
}

/* TM_HTTP_HEAD_LIMIT bounds the header walk: past it the command stops with TM_LIMIT's message
 * and has fetched no more than the limit. */
Test(http, the_header_walk_stops_at_tm_http_head_limit)
{
    write_7b("qwen2-7b.gguf");
    setenv("TM_HTTP_HEAD_LIMIT", "3M", 1);
    size_t mark = log_mark();
    tool_result r = tool_run("info", url("files/qwen2-7b.gguf"), NULL);
    unsetenv("TM_HTTP_HEAD_LIMIT");
    expect_fails(&r, "TM_HTTP_HEAD_LIMIT", NULL);
    tool_result_free(&r);
    json_t *log = log_since(mark);
    traffic t = total(log);
    cr_assert_leq(t.bytes, 3 * MiB, "%llu bytes fetched", (unsigned long long)t.bytes);
    json_decref(log);
}

/* An output path that reads as a URL is refused before anything is written or fetched past
 * the header. */
Test(http, an_output_that_reads_as_a_url_is_refused)
{
    serve_golden("golden-a.gguf", "golden-a.gguf");
    tool_result r = tool_run("dump", url("files/golden-a.gguf"), "f32.rows.weight", "-o",
                             "hf:owner/repo/out.npy", NULL);
    expect_fails(&r, "outputs are local files only", NULL);
    tool_result_free(&r);
    struct stat st;
    cr_assert_neq(stat("hf:owner", &st), 0, "a local directory hf:owner appeared");
}

/* A server that ignores Range and sends the whole 4.3 GB file every time: the header
 * commands still work and stop reading early (well under the file: the server's count, which
 * includes what it pushed into the socket before the tool hung up); dump is refused. */
Test(http, a_server_ignoring_range_is_read_no_further_than_the_header)
{
    big_model m = write_7b("qwen2-7b.gguf");
    const char *u = url("norange/qwen2-7b.gguf");
    static const char *const cmds[] = {"info", "tensors", "check"};
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        size_t mark = log_mark();
        tool_result r = tool_run(cmds[c], u, NULL);
        cr_assert_eq(r.status, 0, "%s: %s", cmds[c], r.err);
        tool_result_free(&r);
        json_t *log = log_since(mark);
        traffic t = total(log);
        char *text = log_text(log);
        cr_assert_lt(t.bytes, 64 * MiB, "%s: %llu bytes sent for a %llu-byte header:\n%s",
                     cmds[c], (unsigned long long)t.bytes, (unsigned long long)m.data_start,
                     text);
        free(text);
        json_decref(log);
    }
    json_t *local = tool_json(0, "tensors", "--json", m.path, NULL);
    json_t *remote = tool_json(0, "tensors", "--json", u, NULL);
    char *a = json_dumps(local, JSON_SORT_KEYS), *b = json_dumps(remote, JSON_SORT_KEYS);
    cr_assert_str_eq(a, b);
    free(a);
    free(b);
    json_decref(local);
    json_decref(remote);

    size_t mark = log_mark();
    tool_result r = tool_run("dump", u, "output_norm.weight", "-o", test_path("n.npy"), NULL);
    expect_fails(&r, "Range", NULL);
    tool_result_free(&r);
    json_t *log = log_since(mark);
    cr_assert_lt(total(log).bytes, 64 * MiB);
    json_decref(log);
}

/* The file is replaced on the server between two requests: refused, whether the size changed
 * or only the ETag (same size, another file). */
Test(http, a_file_replaced_between_requests_is_refused)
{
    big_model m = write_7b("qwen2-7b.gguf");
    /* the replacement: the same header, a different size */
    char swapped[600];
    snprintf(swapped, sizeof swapped, "%s.swapped", m.path);
    size_t n;
    char *head = NULL;
    {
        int fd = open(m.path, O_RDONLY);
        cr_assert_geq(fd, 0);
        n = (size_t)m.data_start;
        head = malloc(n);
        cr_assert_eq(pread(fd, head, n, 0), (ssize_t)n);
        close(fd);
    }
    write_file(swapped, head, n);
    cr_assert_eq(truncate(swapped, (off_t)(file_size(m.path) + 4096)), 0);
    tool_result r = tool_run("info", url("swap/qwen2-7b.gguf"), NULL);
    expect_fails(&r, "changed on the server", NULL);
    tool_result_free(&r);

    /* the same size and the same bytes of header, another file (another ETag): a dump */
    char same[512];
    snprintf(same, sizeof same, "%s/same.gguf", root);
    cr_assert_eq(link(m.path, same), 0);
    snprintf(swapped, sizeof swapped, "%s.swapped", same);
    write_file(swapped, head, n);
    cr_assert_eq(truncate(swapped, (off_t)file_size(m.path)), 0);
    free(head);
    r = tool_run("dump", url("swap/same.gguf"), "output_norm.weight", "-o", test_path("n.npy"),
                 NULL);
    expect_fails(&r, "changed on the server", NULL);
    tool_result_free(&r);
}

/* A host that does not resolve (under a shim whose getaddrinfo knows only localhost, so no
 * resolver is asked). */
Test(http, a_host_that_does_not_resolve)
{
    preload_resolve_shim();
    tool_result r = tool_run("info", "http://tm-no-such-host.invalid/model.gguf", NULL);
    unsetenv("LD_PRELOAD");
    cr_assert(strstr(r.err, "no_resolve: tm-no-such-host.invalid"),
              "the shim did not see the lookup: %s", r.err);
    expect_fails(&r, "resolve", NULL);
    tool_result_free(&r);
}

/* ==== HTTPS ========================================================================================= */

/* A self-signed certificate is refused, naming the certificate; with CURL_CA_BUNDLE naming it,
 * the same URL works. */
Test(http, https_verifies_the_certificate)
{
    if (system("command -v openssl >/dev/null 2>&1") != 0)
        cr_skip_test("the openssl command is missing (as root: apt-get install openssl); "
                     "the HTTPS test needs it to make a certificate");
    char cert[256], key[256], cmd[1024];
    snprintf(cert, sizeof cert, "%s", test_path("cert.pem"));
    snprintf(key, sizeof key, "%s", test_path("key.pem"));
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey rsa:2048 -nodes -keyout '%s' -out '%s' -days 2 "
             "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1,DNS:localhost 2>&1",
             key, cert);
    int st;
    char *out = shell_output(cmd, &st);
    cr_assert_eq(st, 0, "openssl failed: %s", out);
    free(out);
    serve_golden("golden-a.gguf", "golden-a.gguf");
    char *failed = server_try_start(&secure, root, "secure", cert, key);
    cr_assert_null(failed, "%s", failed);
    const char *u = url_of(&secure, "127.0.0.1", "files/golden-a.gguf");
    cr_assert_eq(strncmp(u, "https://", 8), 0);

    tool_result r = tool_run("info", u, NULL);
    expect_fails(&r, "certificate", NULL);
    tool_result_free(&r);

    setenv("CURL_CA_BUNDLE", cert, 1);
    json_t *j = tool_json(0, "info", "--json", u, NULL);
    json_t *l = tool_json(0, "info", "--json", corpus_file("golden-a.gguf"), NULL);
    json_same_but(l, j);
    json_decref(l);
    json_decref(j);
    /* and a tensor through it, as ggml decoded it */
    golden_tensor g = golden_find("a", "q6_K.rows.weight");
    float *ref = golden_values("a", &g);
    r = tool_run("dump", u, "q6_K.rows.weight", "--format", "raw", "-o", "-", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(r.out_len, g.n_values * 4);
    cr_assert_eq(memcmp(r.out, ref, r.out_len), 0);
    tool_result_free(&r);
    free(ref);
}

/* ==== sets of files ================================================================================= */

/* A split set written by `tensormap split` opens across its shards by URL, and by hf: path. */
Test(http, a_split_set_opens_across_its_shards_by_url)
{
    const char *src = serve_golden("golden-a.gguf", "src/golden-a.gguf");
    char prefix[512], hfdir[512];
    snprintf(prefix, sizeof prefix, "%s/split", root);
    mkdirs(prefix);
    snprintf(prefix, sizeof prefix, "%s/split/golden-a", root);
    tool_result r = tool_run("split", "--max-tensors", "20", src, prefix, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    char first[600];
    snprintf(first, sizeof first, "%s-00001-of-00003.gguf", prefix);
    cr_assert_eq(access(first, R_OK), 0, "split wrote no %s", first);

    size_t mark = log_mark();
    json_t *j = tool_json(0, "info", "--json", url("files/split/golden-a-00001-of-00003.gguf"),
                          NULL);
    json_t *log = log_since(mark);
    char *text = log_text(log);
    cr_assert_eq(json_u64(j, "n_shards"), 3);
    const json_t *shards = json_object_get(j, "shards");
    cr_assert_eq(json_array_size(shards), 3);
    for (int i = 0; i < 3; i++) {
        char want[128];
        snprintf(want, sizeof want, "/files/split/golden-a-%05d-of-00003.gguf", i + 1);
        const char *p = str_of(json_array_get(shards, (size_t)i), "path");
        cr_assert(strstr(p, want) && strncmp(p, "http://", 7) == 0, "shard %d: %s", i, p);
        bool asked = false; /* and the server was asked for it */
        size_t k;
        json_t *e;
        json_array_foreach(log, k, e) asked |= strcmp(str_of(e, "path"), want) == 0;
        cr_assert(asked, "no request for %s:\n%s", want, text);
    }
    free(text);
    json_decref(log);
    json_t *l = tool_json(0, "info", "--json", first, NULL);
    json_same_but(l, j);
    json_decref(l);
    json_decref(j);

    /* tensors of the second and the last shard, as ggml decoded them */
    static const char *const picks[] = {"q4_K.raw_blocks", "blk.0.four_d.weight"};
    for (size_t k = 0; k < 2; k++) {
        golden_tensor g = golden_find("a", picks[k]);
        float *ref = golden_values("a", &g);
        r = tool_run("dump", url("files/split/golden-a-00001-of-00003.gguf"), picks[k],
                     "--format", "raw", "-o", "-", NULL);
        cr_assert_eq(r.status, 0, "%s: %s", picks[k], r.err);
        cr_assert_eq(r.out_len, g.n_values * 4, "%s", picks[k]);
        cr_assert_eq(memcmp(r.out, ref, r.out_len), 0, "%s differs from ggml's values", picks[k]);
        tool_result_free(&r);
        free(ref);
    }

    /* the same set in a Hugging Face repository */
    snprintf(hfdir, sizeof hfdir, "%s/hf/tm-test/split/main", root);
    mkdirs(hfdir);
    for (int i = 1; i <= 3; i++) {
        char from[600], to[600];
        snprintf(from, sizeof from, "%s-%05d-of-00003.gguf", prefix, i);
        snprintf(to, sizeof to, "%s/golden-a-%05d-of-00003.gguf", hfdir, i);
        cr_assert_eq(link(from, to), 0);
    }
    j = tool_json(0, "info", "--json", "hf:tm-test/split/golden-a-00001-of-00003.gguf", NULL);
    cr_assert_eq(json_u64(j, "n_shards"), 3);
    json_decref(j);
}

/* A sharded safetensors checkpoint opens through its model.safetensors.index.json by URL. */
Test(http, a_safetensors_index_opens_across_its_shards_by_url)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/st", root);
    mkdirs(dir);
    const float v0[6] = {1.5f, -2.0f, 0.25f, 3.0f, -0.125f, 8.0f}, v1[6] = {7, 6, 5, 4, 3, 2};
    const uint16_t half[4] = {0x3c00, 0xc000, 0x3800, 0x0000}; /* f16 1, -2, 0.5, 0 */
    const uint64_t s23[2] = {2, 3}, s4[1] = {4};
    char one[600], two[600], index[600];
    snprintf(one, sizeof one, "%s/model-00001-of-00002.safetensors", dir);
    snprintf(two, sizeof two, "%s/model-00002-of-00002.safetensors", dir);
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir);
    st_writer *w = st_writer_new();
    st_writer_add(w, "model.layers.0.w", "F32", 2, s23, v0, sizeof v0);
    st_writer_add(w, "model.embed.weight", "F16", 1, s4, half, sizeof half);
    cr_assert_eq(st_writer_write(w, one), 0);
    st_writer_free(w);
    w = st_writer_new();
    st_writer_add(w, "model.layers.1.w", "F32", 2, s23, v1, sizeof v1);
    cr_assert_eq(st_writer_write(w, two), 0);
    st_writer_free(w);
    static const char text[] =
        "{\"metadata\": {}, \"weight_map\": {"
        "\"model.layers.0.w\": \"model-00001-of-00002.safetensors\", "
        "\"model.embed.weight\": \"model-00001-of-00002.safetensors\", "
        "\"model.layers.1.w\": \"model-00002-of-00002.safetensors\"}}";
    write_file(index, text, sizeof text - 1);

    const char *u = url("files/st/model.safetensors.index.json");
    json_t *j = tool_json(0, "info", "--json", u, NULL);
    cr_assert_eq(json_u64(j, "n_shards"), 2);
    const json_t *shards = json_object_get(j, "shards");
    cr_assert_eq(json_array_size(shards), 2);
    json_decref(j);
    j = tool_json(0, "check", "--json", u, NULL);
    cr_assert(json_is_true(json_object_get(j, "consistent")));
    cr_assert_eq(json_u64(j, "tensor_bytes"), 24 + 8 + 24);
    cr_assert_eq(json_u64(j, "file_size"), file_size(one) + file_size(two));
    json_decref(j);
    /* the second shard's tensor, and the first's f16 decoded */
    tool_result r = tool_run("dump", u, "model.layers.1.w", "--format", "raw", "-o", "-", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(r.out_len, sizeof v1);
    cr_assert_eq(memcmp(r.out, v1, sizeof v1), 0);
    tool_result_free(&r);
    r = tool_run("dump", u, "model.embed.weight", "--format", "raw", "-o", "-", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    const float want[4] = {1.0f, -2.0f, 0.5f, 0.0f};
    cr_assert_eq(r.out_len, sizeof want);
    cr_assert_eq(memcmp(r.out, want, sizeof want), 0);
    tool_result_free(&r);
}
