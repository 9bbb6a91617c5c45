/* A large read of a remote file goes out as four ranges at once: the server's log
 * (tests/support/http_server.py, each answer begun after 200 ms on /delay/) shows the four
 * requests of one 16 MiB read in progress together. */
#include "support/http_serve.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MiB (1ull << 20)

static server srv;
static char root[256];

static void suite_init(void)
{
    clean_environment();
    snprintf(root, sizeof root, "%s/root", test_dir());
    cr_assert(mkdir(root, 0700) == 0 || errno == EEXIST, "mkdir %s", root);
    char *failed = server_try_start(&srv, root, "plain", NULL, NULL);
    if (failed) { /* Criterion runs no .fini after a failed .init: clean up here */
        test_cleanup();
        cr_assert_fail("%s", failed);
    }
}

static void suite_fini(void)
{
    server_stop(&srv);
    test_cleanup();
}

TestSuite(remote_parallel, .init = suite_init, .fini = suite_fini, .timeout = 60);

Test(remote_parallel, a_16_mib_read_is_four_ranges_at_once)
{
    /* one f32 tensor of 16 MiB, a hole on disk */
    char path[512], url[256];
    snprintf(path, sizeof path, "%s/big.gguf", root);
    const uint64_t ne[1] = {16 * MiB / 4};
    tm_writer *w;
    tm_error err;
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_tensor(w, "big", TM_TYPE_F32, 1, ne, NULL, &err), TM_OK, "%s",
                 err.message);
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);

    snprintf(url, sizeof url, "http://127.0.0.1:%d/delay/big.gguf", srv.port);
    tm_file *f;
    cr_assert_eq(tm_open(url, 0, &f, &err), TM_OK, "%s", err.message);
    const tm_tensor *t = tm_tensor_find(f, "big");
    cr_assert_not_null(t);
    cr_assert_eq(t->n_bytes, 16 * MiB);
    uint8_t *buf = malloc(t->n_bytes);
    cr_assert_not_null(buf);
    size_t mark = server_log_mark(&srv);
    cr_assert_eq(tm_tensor_fetch(t, 0, t->n_bytes, buf, &err), TM_OK, "%s", err.message);
    free(buf);
    tm_close(f);

    json_t *log = server_log_since(&srv, mark);
    char *text = json_dumps(log, JSON_INDENT(1));
    cr_assert_eq(json_array_size(log), 4, "%s", text);
    double last_start = 0, first_end = 1e300;
    size_t i;
    json_t *e;
    json_array_foreach(log, i, e)
    {
        const double start = json_real_value(json_object_get(e, "start"));
        const double end = json_real_value(json_object_get(e, "end"));
        last_start = start > last_start ? start : last_start;
        first_end = end < first_end ? end : first_end;
    }
    cr_expect_lt(last_start, first_end, "the four ranges were not in progress together:\n%s",
                 text);
    free(text);
    json_decref(log);
}
