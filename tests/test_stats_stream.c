/* stats on a remote tensor streams it: memory does not grow with the size a server declares.
 * A GGUF whose one f32 tensor is 512 MiB (a sparse hole with a few values planted) is served by
 * the local test server (tests/support/http_server.py); `stats` on its URL must stay far below
 * the tensor's size in peak resident memory, measured by the kernel for the child
 * (getrusage(RUSAGE_CHILDREN): the largest child waited for, and the tool is the only one by
 * then), and must print what it prints for the local file. */
#include "support/http_serve.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static server plain;

static void suite_init(void)
{
    clean_environment();
}

static void suite_fini(void)
{
    server_stop(&plain);
    test_cleanup();
}

TestSuite(stats_stream, .init = suite_init, .fini = suite_fini, .timeout = 120);

#define MiB (1ull << 20)
/* The tensor: 128 Mi f32 values, 512 MiB, far above what the tool holds while it streams
 * (a chunk of decoded floats and the library's two fetch buffers, about 100 MiB). */
#define N_VALUES (128ull << 20)
#define RSS_BOUND (256 * MiB)

static void ok(tm_status s, const tm_error *err)
{
    cr_assert_eq(s, TM_OK, "%s", err->message);
}

/* Values planted in the hole, at the start, the middle and the end, so that the summary is not
 * that of zeros alone (and a tensor read short would show). */
static const struct {
    uint64_t at;
    float v;
} planted[] = {{0, 1.5f}, {N_VALUES / 2, -3.25f}, {N_VALUES - 1, 7.0f}};

static const char *write_model(const char *dir)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/big.gguf", dir);
    tm_writer *w;
    tm_error err;
    const uint64_t ne[1] = {N_VALUES};
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_tensor(w, "big", TM_TYPE_F32, 1, ne, NULL, &err), &err); /* data: a hole */
    ok(tm_writer_finish(w, path, &err), &err);
    tm_file *f;
    ok(tm_open(path, 0, &f, &err), &err);
    const uint64_t data = tm_file_layout(f)->data_start + tm_tensor_find(f, "big")->offset;
    tm_close(f);
    int fd = open(path, O_WRONLY);
    cr_assert_geq(fd, 0);
    for (size_t i = 0; i < sizeof planted / sizeof planted[0]; i++)
        cr_assert_eq(pwrite(fd, &planted[i].v, 4, (off_t)(data + 4 * planted[i].at)), 4);
    cr_assert_eq(close(fd), 0);
    return path;
}

Test(stats_stream, a_remote_tensor_is_streamed_not_held_whole)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("not under AddressSanitizer: its quarantine keeps freed buffers resident, so "
                 "peak memory says nothing about what the tool holds (the normal build runs it)");
#endif
    char root[256];
    snprintf(root, sizeof root, "%s/root", test_dir());
    cr_assert_eq(mkdir(root, 0700), 0);
    const char *path = write_model(root);
    char *failed = server_try_start(&plain, root, "plain", NULL, NULL);
    cr_assert_null(failed, "%s", failed);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/files/big.gguf", plain.port);

    tool_result r = tool_run("stats", "--json", url, "big", NULL);
    struct rusage ru;
    cr_assert_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
    cr_assert_eq(r.status, 0, "%s", r.err);
    const uint64_t peak = (uint64_t)ru.ru_maxrss * 1024; /* kilobytes */
    cr_expect_lt(peak, RSS_BOUND,
                 "stats held %llu MiB at its peak for a remote tensor of %llu MiB: it must stream "
                 "it, not fetch it whole", (unsigned long long)(peak / MiB),
                 (unsigned long long)(N_VALUES * 4 / MiB));

    /* what it says is what the local file says, planted values included */
    tool_result l = tool_run("stats", "--json", path, "big", NULL);
    cr_assert_eq(l.status, 0, "%s", l.err);
    cr_assert_str_eq(r.out, l.out);
    json_t *j = json_loads(r.out, 0, NULL);
    const json_t *s = json_array_get(j, 0);
    cr_assert_eq(json_u64(s, "count"), N_VALUES);
    cr_assert_eq(json_real_value(json_object_get(s, "min")), -3.25);
    cr_assert_eq(json_real_value(json_object_get(s, "max")), 7.0);
    json_decref(j);
    tool_result_free(&r);
    tool_result_free(&l);
}
