/* tm_prefetch: a local plan changes no value and is refused when it is wrong; a remote plan's
 * bytes arrive once, bit for bit the file's, within TM_PREFETCH_LIMIT, ahead of the read that
 * takes them (the server's log says when each request ran), and a piece that fails reports its
 * error at that read; the commands that prefetch the next tensor write what they wrote before
 * and fetch no byte more. The expected bytes come from the file itself, read with pread. */
#include "support/http_serve.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MiB (1ull << 20)

/* ---- a model of random bytes, and its bytes as the file holds them ---------------------------- */

typedef struct model {
    char path[512];
    uint64_t data_bytes; /* every tensor's bytes */
} model;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint8_t next_byte(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint8_t)(rng >> 32);
}

/* Tensors t0, t1 and t2 of elems_each f32, q8_0 and f32 values (random bytes), and a small one. */
static model write_model(const char *path, uint64_t elems_each)
{
    model m = {.data_bytes = 0};
    snprintf(m.path, sizeof m.path, "%s", path);
    const tm_type types[4] = {TM_TYPE_F32, TM_TYPE_Q8_0, TM_TYPE_F32, TM_TYPE_F32};
    const uint64_t ne[4][2] = {{1024, elems_each / 1024}, {1024, elems_each / 1024},
                               {1024, elems_each / 1024}, {256, 1}};
    const char *names[4] = {"t0", "t1", "t2", "small"};
    uint8_t *data[4];
    tm_writer *w;
    tm_error err;
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK, "%s", err.message);
    for (int i = 0; i < 4; i++) {
        const uint64_t n = ne[i][0] * ne[i][1] / tm_type_block_elems(types[i]) *
                           tm_type_block_bytes(types[i]);
        data[i] = malloc(n);
        cr_assert_not_null(data[i]);
        for (uint64_t k = 0; k < n; k++)
            data[i][k] = next_byte();
        if (types[i] == TM_TYPE_Q8_0) /* finite f16 scales: the values compare as numbers too */
            for (uint64_t k = 0; k < n; k += 34)
                data[i][k + 1] &= 0x3b;
        cr_assert_eq(tm_writer_tensor(w, names[i], types[i], 2, ne[i], data[i], &err), TM_OK,
                     "%s", err.message);
        m.data_bytes += n;
    }
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);
    for (int i = 0; i < 4; i++)
        free(data[i]);
    return m;
}

/* t's bytes as the file at path holds them (pread: not the library's reading). */
static uint8_t *file_bytes(const char *path, const tm_tensor *t)
{
    const uint64_t at = tm_shard_layout(t->file, t->shard)->data_start + t->offset;
    uint8_t *b = malloc(t->n_bytes);
    cr_assert_not_null(b);
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0);
    cr_assert_eq(pread(fd, b, t->n_bytes, (off_t)at), (ssize_t)t->n_bytes);
    close(fd);
    return b;
}

/* Every tensor of f, whole. */
static size_t whole_plan(const tm_file *f, tm_prefetch_range *plan)
{
    for (uint64_t i = 0; i < tm_n_tensors(f); i++)
        plan[i] = (tm_prefetch_range){tm_tensor_at(f, i), 0, TM_PREFETCH_TO_END};
    return (size_t)tm_n_tensors(f);
}

/* tm_tensor_fetch of t equals the file's bytes. */
static void expect_bytes(const char *path, const tm_tensor *t)
{
    uint8_t *want = file_bytes(path, t), *got = malloc(t->n_bytes);
    tm_error err;
    cr_assert_eq(tm_tensor_fetch(t, 0, t->n_bytes, got, &err), TM_OK, "%s", err.message);
    cr_assert_eq(memcmp(got, want, t->n_bytes), 0, "tensor %.*s: other bytes than the file's",
                 (int)t->name.len, t->name.ptr);
    free(want);
    free(got);
}

/* ---- local files ------------------------------------------------------------------------------ */

TestSuite(prefetch, .fini = test_cleanup, .timeout = 60);

/* Each method, on a mapped file and on one read as needed: TM_OK, every byte planned, and every
 * value decoded as before the plan. */
Test(prefetch, a_local_plan_changes_no_value_with_any_method)
{
    const model m = write_model(test_path("m.gguf"), 64 * 1024);
    setenv("TM_READ_WHOLE_LIMIT", "4K", 1); /* TM_OPEN_NO_MMAP then reads as needed */
    const char *methods[] = {"madvise", "fadvise", "thread", "none", "kernel", ""};
    const unsigned flags[] = {0, TM_OPEN_NO_MMAP};
    for (unsigned fl = 0; fl < 2; fl++) {
        for (unsigned k = 0; k < 6; k++) {
            setenv("TM_PREFETCH_METHOD", methods[k], 1);
            tm_file *f;
            tm_error err;
            cr_assert_eq(tm_open(m.path, flags[fl], &f, &err), TM_OK, "%s", err.message);
            tm_prefetch_range plan[8];
            uint64_t planned = 1;
            cr_assert_eq(tm_prefetch(f, plan, whole_plan(f, plan), &planned, &err), TM_OK,
                         "%s: %s", methods[k], err.message);
            /* none, and the default (the kernel's own readahead), ask for nothing */
            cr_expect_eq(planned, k >= 3 ? 0 : m.data_bytes, "%s, flags %u: %llu planned",
                         methods[k], flags[fl], (unsigned long long)planned);
            for (uint64_t i = 0; i < tm_n_tensors(f); i++)
                expect_bytes(m.path, tm_tensor_at(f, i));
            tm_close(f);
        }
    }
    unsetenv("TM_PREFETCH_METHOD");
    unsetenv("TM_READ_WHOLE_LIMIT");
}

/* A file held in memory has nothing to read ahead: TM_OK, 0 planned. */
Test(prefetch, a_buffer_plans_nothing)
{
    const model m = write_model(test_path("m.gguf"), 8 * 1024);
    size_t len;
    char *bytes = read_all(m.path, &len);
    tm_file *f;
    tm_error err;
    cr_assert_eq(tm_open_buffer(bytes, len, 0, &f, &err), TM_OK, "%s", err.message);
    tm_prefetch_range plan[8];
    uint64_t planned = 1;
    cr_assert_eq(tm_prefetch(f, plan, whole_plan(f, plan), &planned, &err), TM_OK, "%s",
                 err.message);
    cr_expect_eq(planned, 0);
    tm_close(f);
    free(bytes);
}

static void expect_refused(const tm_file *f, const tm_prefetch_range *plan, size_t n,
                           tm_status code, const char *words)
{
    tm_error err = {0};
    uint64_t planned = 1;
    cr_assert_eq(tm_prefetch(f, plan, n, &planned, &err), code, "%s (for '%s')", err.message,
                 words);
    cr_expect_eq(err.code, code);
    cr_expect(strstr(err.message, words), "'%s' is not in: %s", words, err.message);
    cr_expect_eq(planned, 0);
}

Test(prefetch, a_wrong_plan_is_refused_naming_the_range)
{
    const model m = write_model(test_path("m.gguf"), 8 * 1024);
    tm_file *f, *g;
    tm_error err;
    cr_assert_eq(tm_open(m.path, 0, &f, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_open(m.path, 0, &g, &err), TM_OK, "%s", err.message);
    const tm_tensor *t0 = tm_tensor_at(f, 0), *t1 = tm_tensor_at(f, 1);
    tm_prefetch_range plan[2] = {{t0, 0, 16}, {t1, 0, TM_PREFETCH_TO_END}};

    expect_refused(NULL, plan, 1, TM_INVALID_ARG, "file and ranges");
    expect_refused(f, NULL, 1, TM_INVALID_ARG, "file and ranges");
    plan[1].tensor = NULL;
    expect_refused(f, plan, 2, TM_INVALID_ARG, "range 1: the tensor is NULL");
    plan[1].tensor = tm_tensor_at(g, 1); /* another file's */
    expect_refused(f, plan, 2, TM_INVALID_ARG, "range 1: the tensor is not one of this file's");
    tm_tensor copy = *t1; /* a copy is not the file's tensor either */
    plan[1].tensor = &copy;
    expect_refused(f, plan, 2, TM_INVALID_ARG, "range 1: the tensor is not one of this file's");
    plan[1] = (tm_prefetch_range){t1, t1->n_bytes - 4, 8};
    expect_refused(f, plan, 2, TM_INVALID_ARG, "range 1: bytes [");
    expect_refused(f, plan, 2, TM_INVALID_ARG, "are outside tensor 't1'");
    plan[1] = (tm_prefetch_range){t1, t1->n_bytes + 1, TM_PREFETCH_TO_END};
    expect_refused(f, plan, 2, TM_INVALID_ARG, "range 1: bytes [");
    plan[1] = (tm_prefetch_range){t1, UINT64_MAX - 2, 8}; /* an end past 2^64 */
    expect_refused(f, plan, 2, TM_INVALID_ARG, "range 1: bytes [");
    expect_refused(f, plan, (size_t)TM_PREFETCH_MAX_RANGES + 1, TM_LIMIT, "ranges, more than");
    plan[1] = (tm_prefetch_range){t1, 0, 8};
    setenv("TM_PREFETCH_METHOD", "sometimes\x1b[31m", 1);
    expect_refused(f, plan, 2, TM_INVALID_ARG, "TM_PREFETCH_METHOD is 'sometimes\\x1b[31m'");
    /* the plan itself was right (asked for with madvise: by default a local plan asks for
     * nothing, and would plan 0 bytes either way) */
    setenv("TM_PREFETCH_METHOD", "madvise", 1);
    uint64_t planned = 0;
    cr_assert_eq(tm_prefetch(f, plan, 2, &planned, &err), TM_OK, "%s", err.message);
    cr_expect_eq(planned, 24);
    unsetenv("TM_PREFETCH_METHOD");
    tm_close(g);
    tm_close(f);
}

Test(prefetch, a_tensor_cut_off_is_refused_naming_it)
{
    const model m = write_model(test_path("m.gguf"), 8 * 1024);
    cr_assert_eq(truncate(m.path, 20000), 0);
    tm_file *f;
    tm_error err;
    cr_assert_eq(tm_open(m.path, TM_OPEN_TRUNCATED, &f, &err), TM_OK, "%s", err.message);
    const tm_tensor *t = tm_tensor_find(f, "t1");
    cr_assert(tm_tensor_is_cut(t));
    tm_prefetch_range plan[1] = {{t, 0, TM_PREFETCH_TO_END}};
    expect_refused(f, plan, 1, TM_TRUNCATED, "tensor 't1' is cut off");
    tm_close(f);
}

/* ---- remote files ----------------------------------------------------------------------------- */

static server srv;
static char root[256];

static void suite_init(void) { server_suite_start(&srv, root, "plain", NULL, NULL); }
static void suite_fini(void) { server_suite_stop(&srv); }

TestSuite(remote_prefetch, .init = suite_init, .fini = suite_fini, .timeout = 90);

static const char *url(const char *route, const char *name)
{
    static char u[512];
    snprintf(u, sizeof u, "http://127.0.0.1:%d/%s/%s", srv.port, route, name);
    return u;
}

static model remote_model(const char *name, uint64_t elems_each)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, name);
    return write_model(path, elems_each);
}

static uint64_t fetched_bytes(const tm_file *f)
{
    uint64_t b;
    tm_file_fetched(f, &b, NULL);
    return b;
}

/* Wait (at most 20 s) until f has fetched want bytes. */
static void wait_fetched(const tm_file *f, uint64_t want)
{
    for (int i = 0; i < 2000 && fetched_bytes(f) < want; i++)
        sleep_ms(10);
    cr_assert_eq(fetched_bytes(f), want, "fetched %llu bytes, waiting for %llu",
                 (unsigned long long)fetched_bytes(f), (unsigned long long)want);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* the server's time.monotonic() */
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* name opened by URL (its head: the first 64 KiB, *head bytes) and every tensor of it planned,
 * the bytes planned in *planned. */
static tm_file *open_and_plan(const char *name, uint64_t *head, uint64_t *planned)
{
    tm_file *f;
    tm_error err;
    setenv("TM_HTTP_CHUNK", "64K", 1);
    cr_assert_eq(tm_open(url("files", name), 0, &f, &err), TM_OK, "%s", err.message);
    unsetenv("TM_HTTP_CHUNK");
    *head = fetched_bytes(f);
    tm_prefetch_range plan[8];
    cr_assert_eq(tm_prefetch(f, plan, whole_plan(f, plan), planned, &err), TM_OK, "%s",
                 err.message);
    return f;
}

/* Every tensor planned: fetched once, in the background, then read and decoded from the
 * buffer without another request, bit for bit the file's bytes and the local file's values. */
Test(remote_prefetch, a_plan_is_fetched_once_and_read_bit_for_bit)
{
    const model m = remote_model("all.gguf", 1536 * 1024); /* 6 MiB each */
    uint64_t head, planned;
    tm_file *f = open_and_plan("all.gguf", &head, &planned), *local;
    tm_error err;
    cr_assert_eq(tm_open(m.path, 0, &local, &err), TM_OK, "%s", err.message);
    /* the head holds the first bytes of data already: those are not fetched again */
    const uint64_t in_head = head - tm_file_layout(f)->data_start;
    cr_assert_eq(planned, m.data_bytes - in_head);
    wait_fetched(f, head + planned);

    size_t mark = server_log_mark(&srv);
    for (const char *name = "t0"; name; name = strcmp(name, "t0") == 0 ? "t2" : NULL)
        expect_bytes(m.path, tm_tensor_find(f, name));
    expect_bytes(m.path, tm_tensor_find(f, "small"));
    const tm_tensor *q = tm_tensor_find(f, "t1"), *lq = tm_tensor_find(local, "t1");
    float *got = malloc(q->n_elements * sizeof *got), *want = malloc(q->n_elements * sizeof *want);
    cr_assert_eq(tm_dequant_tensor(q, got, 2, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_dequant_tensor(lq, want, 2, &err), TM_OK, "%s", err.message);
    cr_assert_eq(memcmp(got, want, q->n_elements * sizeof *got), 0);
    uint64_t bytes, requests;
    server_traffic_since(&srv, mark, &bytes, &requests);
    cr_expect_eq(requests, 0, "the reads asked the server again (%llu bytes)",
                 (unsigned long long)bytes);
    cr_expect_eq(fetched_bytes(f), head + planned);
    free(got);
    free(want);
    tm_close(local);
    tm_close(f);
}

/* A plan larger than TM_PREFETCH_LIMIT prefetches what fits, nothing more; the rest is fetched
 * when it is read, and nothing twice. */
Test(remote_prefetch, a_plan_larger_than_the_limit_fetches_what_fits)
{
    const model m = remote_model("bounded.gguf", 1536 * 1024);
    setenv("TM_PREFETCH_LIMIT", "8M", 1);
    uint64_t head, planned;
    tm_file *f = open_and_plan("bounded.gguf", &head, &planned);
    unsetenv("TM_PREFETCH_LIMIT");
    cr_assert_eq(planned, 8 * MiB);
    wait_fetched(f, head + 8 * MiB);
    sleep_ms(300);
    cr_assert_eq(fetched_bytes(f), head + 8 * MiB, "more than the limit was fetched");
    for (uint64_t i = 0; i < tm_n_tensors(f); i++)
        expect_bytes(m.path, tm_tensor_at(f, i));
    const uint64_t in_head = head - tm_file_layout(f)->data_start;
    cr_expect_eq(fetched_bytes(f), head + m.data_bytes - in_head, "some bytes were fetched twice");
    tm_close(f);
}

/* A plan dropped (n_ranges 0) and a plan never read are freed, at tm_close at the latest, with a
 * piece still in flight (the sanitizer build checks for leaks). */
Test(remote_prefetch, what_is_not_read_is_freed)
{
    const model m = remote_model("freed.gguf", 1536 * 1024);
    tm_file *f;
    tm_error err;
    cr_assert_eq(tm_open(url("files", "freed.gguf"), 0, &f, &err), TM_OK, "%s", err.message);
    tm_prefetch_range plan[8];
    const size_t n = whole_plan(f, plan);
    cr_assert_eq(tm_prefetch(f, plan, n, NULL, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_prefetch(f, NULL, 0, NULL, &err), TM_OK, "%s", err.message);
    /* what is read after a drop comes from the server, and is still the file's */
    expect_bytes(m.path, tm_tensor_find(f, "t2"));
    cr_assert_eq(tm_prefetch(f, plan, n, NULL, &err), TM_OK, "%s", err.message);
    tm_close(f);

    cr_assert_eq(tm_open(url("delay", "freed.gguf"), 0, &f, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_prefetch(f, plan, whole_plan(f, plan), NULL, &err), TM_OK, "%s", err.message);
    sleep_ms(50); /* the first piece is asked for and not answered yet */
    tm_close(f);
}

/* The file changes on the server after it was opened: the piece fetched ahead fails, and the
 * read that wants it gets that error, without asking again. */
Test(remote_prefetch, a_piece_that_fails_reports_at_the_read)
{
    const model m = remote_model("swap.gguf", 64 * 1024);
    char other[600];
    snprintf(other, sizeof other, "%s.swapped", m.path);
    write_model(other, 128 * 1024); /* another size */
    tm_file *f;
    tm_error err;
    setenv("TM_HTTP_CHUNK", "4K", 1);
    cr_assert_eq(tm_open(url("swap", "swap.gguf"), 0, &f, &err), TM_OK, "%s", err.message);
    unsetenv("TM_HTTP_CHUNK");
    const tm_tensor *t = tm_tensor_find(f, "t2");
    uint64_t requests, r0;
    tm_file_fetched(f, NULL, &r0);
    tm_prefetch_range plan[1] = {{t, 0, TM_PREFETCH_TO_END}};
    cr_assert_eq(tm_prefetch(f, plan, 1, NULL, &err), TM_OK, "%s", err.message);
    for (int i = 0; i < 2000; i++, sleep_ms(10)) {
        tm_file_fetched(f, NULL, &requests);
        if (requests > r0)
            break;
    }
    cr_assert_gt(requests, r0, "the plan asked for nothing");
    size_t mark = server_log_mark(&srv);
    uint8_t *buf = malloc(t->n_bytes);
    err = (tm_error){0};
    cr_assert_eq(tm_tensor_fetch(t, 0, t->n_bytes, buf, &err), TM_IO, "%s", err.message);
    cr_expect(strstr(err.message, "tensor 't2': "), "%s", err.message);
    cr_expect(strstr(err.message, "changed on the server"), "%s", err.message);
    uint64_t bytes, asked;
    server_traffic_since(&srv, mark, &bytes, &asked);
    cr_expect_eq(asked, 0, "the read asked again instead of reporting the plan's error");
    free(buf);
    tm_close(f);
}

/* Each answer begun 200 ms late: with t0 and t2 planned, t2's request begins while t0 is being
 * "decoded" (a sleep after its read), and t2's read then needs no request. */
Test(remote_prefetch, the_next_tensor_is_fetched_while_this_one_is_decoded)
{
    remote_model("overlap.gguf", 64 * 1024);
    tm_file *f;
    tm_error err;
    setenv("TM_HTTP_CHUNK", "4K", 1);
    cr_assert_eq(tm_open(url("delay", "overlap.gguf"), 0, &f, &err), TM_OK, "%s", err.message);
    unsetenv("TM_HTTP_CHUNK");
    const tm_tensor *t0 = tm_tensor_find(f, "t0"), *t2 = tm_tensor_find(f, "t2");
    uint8_t *buf = malloc(t0->n_bytes > t2->n_bytes ? t0->n_bytes : t2->n_bytes);
    size_t mark = server_log_mark(&srv);
    tm_prefetch_range plan[2] = {{t0, 0, TM_PREFETCH_TO_END}, {t2, 0, TM_PREFETCH_TO_END}};
    cr_assert_eq(tm_prefetch(f, plan, 2, NULL, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_tensor_fetch(t0, 0, t0->n_bytes, buf, &err), TM_OK, "%s", err.message);
    sleep_ms(600); /* decoding t0 */
    const double decoded = now_s();
    cr_assert_eq(tm_tensor_fetch(t2, 0, t2->n_bytes, buf, &err), TM_OK, "%s", err.message);
    tm_close(f);

    json_t *log = server_log_since(&srv, mark);
    char *text = json_dumps(log, JSON_INDENT(1));
    size_t i;
    json_t *e;
    unsigned before = 0;
    json_array_foreach(log, i, e)
    {
        const double start = json_real_value(json_object_get(e, "start"));
        before += start < decoded;
        cr_expect_lt(start, decoded, "a request began after t0's decode ended:\n%s", text);
    }
    cr_expect_eq(before, 2, "t0's and t2's requests:\n%s", text);
    free(text);
    json_decref(log);
    free(buf);
}

/* ---- the commands ---------------------------------------------------------------------------- */

/* dump --all over HTTP with the next tensor prefetched: the files the local dump writes, and
 * exactly the bytes a dump without prefetch fetches. */
Test(remote_prefetch, dump_all_writes_the_same_and_fetches_the_same_bytes)
{
    const model m = remote_model("dump.gguf", 512 * 1024);
    const char *u = url("files", "dump.gguf");
    char local_dir[512], remote_dir[512], plain_dir[512];
    snprintf(local_dir, sizeof local_dir, "%s", test_path("local"));
    snprintf(remote_dir, sizeof remote_dir, "%s", test_path("remote"));
    snprintf(plain_dir, sizeof plain_dir, "%s", test_path("plain"));
    tool_result r = tool_run("dump", "--all", "--format", "raw", m.path, "-o", local_dir, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);

    uint64_t with_bytes, with_requests, without_bytes, without_requests;
    size_t mark = server_log_mark(&srv);
    r = tool_run("dump", "--all", "--format", "raw", u, "-o", remote_dir, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    server_traffic_since(&srv, mark, &with_bytes, &with_requests);

    setenv("TM_PREFETCH_METHOD", "none", 1);
    mark = server_log_mark(&srv);
    r = tool_run("dump", "--all", "--format", "raw", u, "-o", plain_dir, NULL);
    unsetenv("TM_PREFETCH_METHOD");
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    server_traffic_since(&srv, mark, &without_bytes, &without_requests);
    cr_expect_eq(with_bytes, without_bytes, "%llu bytes with prefetch, %llu without",
                 (unsigned long long)with_bytes, (unsigned long long)without_bytes);
    cr_expect_leq(with_bytes, m.data_bytes + 2 * MiB + 64 * 1024);

    const char *names[] = {"t0.f32", "t1.f32", "t2.f32", "small.f32"};
    for (int i = 0; i < 4; i++) {
        char a[600], b[600];
        snprintf(a, sizeof a, "%s/%s", local_dir, names[i]);
        snprintf(b, sizeof b, "%s/%s", remote_dir, names[i]);
        size_t na, nb;
        char *x = read_all(a, &na), *y = read_all(b, &nb);
        cr_assert_eq(na, nb, "%s", names[i]);
        cr_assert_eq(memcmp(x, y, na), 0, "%s differs over HTTP", names[i]);
        free(x);
        free(y);
    }
}

/* Whether the server was asked, since mark, for a range that starts at byte at. */
static bool asked_from(size_t mark, uint64_t at)
{
    json_t *log = server_log_since(&srv, mark);
    char want[40];
    snprintf(want, sizeof want, "bytes=%llu-", (unsigned long long)at);
    bool found = false;
    size_t i;
    json_t *e;
    json_array_foreach(log, i, e)
    {
        const char *range = json_string_value(json_object_get(e, "range"));
        found |= range && strncmp(range, want, strlen(want)) == 0;
    }
    json_decref(log);
    return found;
}

/* dump --all writes t0 into a FIFO nobody reads yet, so t0's decode cannot end: t1's bytes are
 * asked for all the same (the prefetch of the tensor after the current one). Then t0's values
 * are read out of the FIFO, and are the local dump's. */
Test(remote_prefetch, dump_all_asks_for_the_next_tensor_before_this_one_is_done)
{
    const model m = remote_model("ahead.gguf", 512 * 1024); /* t0: 2 MiB of f32 */
    char dir[512], fifo[600], local_dir[512], local_t0[600];
    snprintf(dir, sizeof dir, "%s", test_path("ahead"));
    snprintf(local_dir, sizeof local_dir, "%s", test_path("ahead-local"));
    tool_result r = tool_run("dump", "--all", "--format", "raw", m.path, "-o", local_dir, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    cr_assert_eq(mkdir(dir, 0777), 0);
    snprintf(fifo, sizeof fifo, "%s/t0.f32", dir);
    cr_assert_eq(mkfifo(fifo, 0666), 0);

    tm_file *f;
    tm_error err;
    cr_assert_eq(tm_open(m.path, 0, &f, &err), TM_OK, "%s", err.message);
    const uint64_t t1_at = tm_file_layout(f)->data_start + tm_tensor_find(f, "t1")->offset;
    tm_close(f);
    cr_assert_gt(t1_at, 2 * MiB, "t1 must lie past the head the first request brings");

    size_t mark = server_log_mark(&srv);
    const char *argv[] = {"tensormap", "dump", "--all", "--format", "raw",
                          url("files", "ahead.gguf"), "-o", dir, NULL};
    const tool_spawn how = {.err_path = test_path("ahead.err")};
    const int pid = tool_start(&how, argv);
    const int rd = open(fifo, O_RDONLY); /* the tool has begun writing t0 */
    cr_assert_geq(rd, 0);
    bool ahead = false;
    for (int i = 0; i < 1000 && !(ahead = asked_from(mark, t1_at)); i++)
        sleep_ms(10);
    size_t n_want;
    snprintf(local_t0, sizeof local_t0, "%s/t0.f32", local_dir);
    char *want = read_all(local_t0, &n_want), *got = malloc(n_want + 1);
    size_t n_got = 0;
    for (ssize_t k; (k = read(rd, got + n_got, n_want + 1 - n_got)) > 0;)
        n_got += (size_t)k;
    close(rd);
    cr_assert_eq(tool_wait(pid), 0);
    cr_expect(ahead, "t1's bytes were not asked for while t0 was still being written");
    cr_assert_eq(n_got, n_want);
    cr_assert_eq(memcmp(got, want, n_want), 0, "t0's values differ over HTTP");
    free(got);
    free(want);
}
