/* TM_HTTP_TIMEOUT: a server that says nothing, or a byte per answer, or a trickle just above
 * libcurl's stall rate, fails within the deadline instead of holding the caller for minutes or
 * hours. Run in the test's own process against tests/support/http_server.py with a deadline of
 * two seconds; each test allows ten, and the suite's timeout (60 s, as the other remote
 * suites': a shorter one made Criterion 2.4.1's runner leak under LeakSanitizer) is what stops
 * the code that had no deadline. */
#include "support/http_serve.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define DEADLINE_S 2
#define ALLOWED_S 10.0

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
    server_put_golden(root, "golden-a.gguf", "golden-a.gguf");
    char s[16];
    snprintf(s, sizeof s, "%d", DEADLINE_S);
    setenv("TM_HTTP_TIMEOUT", s, 1);
}

static void suite_fini(void)
{
    server_stop(&srv);
    test_cleanup();
}

TestSuite(remote_deadline, .init = suite_init, .fini = suite_fini, .timeout = 60);

static const char *url(const char *path)
{
    static char u[256];
    snprintf(u, sizeof u, "http://127.0.0.1:%d/%s", srv.port, path);
    return u;
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Open path and read its largest tensor (q6_K.raw_blocks, 20,160 bytes); the first call that
 * fails must fail on the deadline, soon. */
static void expect_deadline(const char *path)
{
    const double start = seconds();
    tm_file *f = NULL;
    tm_error err = {0};
    tm_status st = tm_open(url(path), 0, &f, &err);
    if (st == TM_OK) {
        const tm_tensor *t = tm_tensor_find(f, "q6_K.raw_blocks");
        cr_assert_not_null(t);
        void *buf = malloc(t->n_bytes);
        st = tm_tensor_fetch(t, 0, t->n_bytes, buf, &err);
        free(buf);
        tm_close(f);
    }
    const double took = seconds() - start;
    cr_expect_eq(st, TM_IO, "%s: %s (%s)", path, tm_status_name(st), err.message);
    cr_expect(strstr(err.message, "TM_HTTP_TIMEOUT") != NULL, "%s: %s", path, err.message);
    cr_expect_lt(took, ALLOWED_S, "%s: took %.1f s with a deadline of %d s", path, took,
                 DEADLINE_S);
}

/* No answer at all: libcurl's stall check alone took 60 s an attempt, four attempts. */
Test(remote_deadline, a_silent_server_fails_on_the_deadline)
{
    expect_deadline("silent/golden-a.gguf");
}

/* 1,100 bytes a second never trips the stall check (1 KiB/s for 60 s): the 294 KB first
 * answer alone took four and a half minutes. */
Test(remote_deadline, a_trickle_fails_on_the_deadline)
{
    expect_deadline("trickle/golden-a.gguf");
}

/* Each later range answered with one byte, 20 answers a second: asking for the rest each
 * time, the tensor's 20,160 bytes took 17 minutes. */
Test(remote_deadline, a_byte_per_answer_fails_on_the_deadline)
{
    setenv("TM_HTTP_CHUNK", "4K", 1); /* so that the tensor is a range of its own */
    expect_deadline("drip/golden-a.gguf");
}

/* The deadline is per step, not a budget the file uses up: a healthy server is read whole
 * under it, header and tensors, as often as asked. */
Test(remote_deadline, a_healthy_server_is_read_under_the_deadline)
{
    setenv("TM_HTTP_CHUNK", "4K", 1);
    tm_file *f = NULL, *local = NULL;
    tm_error err = {0};
    char path[512];
    snprintf(path, sizeof path, "%s/golden-a.gguf", root);
    cr_assert_eq(tm_open(url("files/golden-a.gguf"), 0, &f, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_open(path, 0, &local, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_n_tensors(f), tm_n_tensors(local));
    for (uint64_t i = 0; i < tm_n_tensors(f); i++) {
        const tm_tensor *t = tm_tensor_at(f, i), *l = tm_tensor_at(local, i);
        void *buf = malloc(t->n_bytes ? t->n_bytes : 1);
        cr_assert_eq(tm_tensor_fetch(t, 0, t->n_bytes, buf, &err), TM_OK, "%s", err.message);
        cr_expect_eq(memcmp(buf, l->data, t->n_bytes), 0, "tensor %llu", (unsigned long long)i);
        free(buf);
    }
    tm_close(f);
    tm_close(local);
}
