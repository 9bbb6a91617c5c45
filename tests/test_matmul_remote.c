/* tm_matmul on a remote tensor (over HTTP from tests/support/http_server.py on 127.0.0.1),
 * fetched in pieces of whole rows: Y is the local file's bit for bit, each piece's rows landing
 * at their place in every column of Y. */
#include "tensormap.h"
#include "support/http_serve.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static server plain;
static char root[256];

static void suite_init(void)
{
    clean_environment();
    snprintf(root, sizeof root, "%s/root", test_dir());
    cr_assert_eq(mkdir(root, 0700), 0, "mkdir %s", root);
    char *failed = server_try_start(&plain, root, "plain", NULL, NULL);
    if (failed) { /* Criterion runs no .fini after a failed .init: clean up here */
        test_cleanup();
        cr_assert_fail("%s", failed);
    }
}

static void suite_fini(void)
{
    server_stop(&plain);
    test_cleanup();
}

TestSuite(matmul_remote, .init = suite_init, .fini = suite_fini, .timeout = 120);

Test(matmul_remote, pieces_of_rows_land_in_every_column)
{
    /* 4,000 rows of q8_0, 4352 bytes each: two 16 MiB pieces, the second short */
    enum { COLS = 4096, ROWS = 4000, N = 3 };
    const size_t bytes = (size_t)ROWS * COLS / 32 * 34;
    uint8_t *v = malloc(bytes);
    float *X = malloc(sizeof(float) * COLS * N), *Yr = malloc(sizeof(float) * ROWS * N),
          *Yl = malloc(sizeof(float) * ROWS * N);
    cr_assert(v && X && Yr && Yl);
    for (size_t i = 0; i < bytes; i++)
        v[i] = (uint8_t)(i * 2654435761u >> 13);
    for (size_t b = 0; b < bytes; b += 34) { /* a half scale of about 0.01 in every block */
        v[b] = 0x1f;
        v[b + 1] = 0x21;
    }
    for (size_t i = 0; i < (size_t)COLS * N; i++)
        X[i] = (float)(i % 17) - 8.0f;
    char path[512];
    snprintf(path, sizeof path, "%s/w.gguf", root);
    tm_writer *w;
    tm_error err;
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK, "%s", err.message);
    const uint64_t ne[2] = {COLS, ROWS};
    cr_assert_eq(tm_writer_tensor(w, "w", TM_TYPE_Q8_0, 2, ne, v, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);
    char url[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/files/w.gguf", plain.port);
    tm_file *remote, *local;
    cr_assert_eq(tm_open(url, 0, &remote, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_open(path, 0, &local, &err), TM_OK, "%s", err.message);
    const tm_tensor *t = tm_tensor_find(remote, "w");
    cr_assert_null(t->data, "a remote tensor has no data pointer");
    for (unsigned mode = 0; mode < 2; mode++) {
        memset(Yr, 0xff, sizeof(float) * ROWS * N);
        cr_assert_eq(tm_matmul(t, X, COLS, N, Yr, mode, 2, &err), TM_OK, "%s", err.message);
        cr_assert_eq(tm_matmul(tm_tensor_find(local, "w"), X, COLS, N, Yl, mode, 2, &err), TM_OK,
                     "%s", err.message);
        cr_assert_eq(memcmp(Yr, Yl, sizeof(float) * ROWS * N), 0, "mode %u: remote differs", mode);
    }
    uint64_t fetched, requests;
    tm_file_fetched(remote, &fetched, &requests);
    cr_assert_geq(fetched, 2 * bytes, "two calls, each fetching W once");
    cr_assert_lt(fetched, 3 * bytes, "W fetched once per call, not once per column");
    tm_close(remote);
    tm_close(local);
    free(v);
    free(X);
    free(Yr);
    free(Yl);
}
