/* Answers a server must not get away with: a Content-Range that contradicts itself or the
 * request, and a header line longer than libcurl holds. Each is refused with its own message
 * (not "consistent", not "Out of memory"), from tests/support/http_server.py's routes. */
#include "support/http_serve.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
}

static void suite_fini(void)
{
    server_stop(&srv);
    test_cleanup();
}

TestSuite(remote_answers, .init = suite_init, .fini = suite_fini, .timeout = 60);

static const char *url(const char *path)
{
    static char u[256];
    snprintf(u, sizeof u, "http://127.0.0.1:%d/%s", srv.port, path);
    return u;
}

/* `check` gives its verdict on standard output, the other commands their error on stderr. */
static void expect_refused(const char *command, const char *path, const char *says)
{
    tool_result r = tool_run(command, url(path), NULL);
    cr_expect_eq(r.status, 1, "%s %s: exit %d\nstdout: %s\nstderr: %s", command, path, r.status,
                 r.out, r.err);
    cr_expect(strstr(strcmp(command, "check") == 0 ? r.out : r.err, says) != NULL,
              "%s %s does not say '%s':\nstdout: %s\nstderr: %s", command, path, says, r.out,
              r.err);
    tool_result_free(&r);
}

/* A GGUF file with metadata and no tensors (a vocabulary-only file), about 5 KB. */
static void write_vocab(const char *name)
{
    char path[512], text[5000];
    snprintf(path, sizeof path, "%s/%s", root, name);
    memset(text, 'v', sizeof text);
    tm_writer *w;
    tm_error err;
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_kv_str(w, "tokenizer.text", text, sizeof text, &err), TM_OK, "%s",
                 err.message);
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);
}

/* The first answer is bytes 0-N of a file it says is N - 999 bytes long. Taken at its word, the
 * head held more than the file: a file without tensors then ended before its own header, its
 * padding wrapped to 2^64 - 1000 and `check` called it consistent. */
Test(remote_answers, a_first_answer_past_its_own_total_is_refused)
{
    write_vocab("vocab.gguf");
    expect_refused("check", "short-total/vocab.gguf", "runs past the total it declares");
    expect_refused("info", "short-total/vocab.gguf", "runs past the total it declares");
    tm_file *f = NULL;
    tm_error err;
    cr_expect_eq(tm_open(url("short-total/vocab.gguf"), 0, &f, &err), TM_IO, "%s", err.message);
    tm_close(f);
}

/* libcurl refuses a header line over CURL_MAX_HTTP_HEADER with "Out of memory": the message
 * says what the server did instead. */
Test(remote_answers, an_overlong_header_line_has_its_own_message)
{
    tool_result r = tool_run("info", url("long-header/golden-a.gguf"), NULL);
    cr_expect_eq(r.status, 1, "exit %d, stderr: %s", r.status, r.err);
    cr_expect(strstr(r.err, "response header line longer than libcurl accepts") != NULL, "%s",
              r.err);
    cr_expect(strstr(r.err, "emory") == NULL, "%s", r.err);
    tool_result_free(&r);
}

/* A head of 4 KiB (the smallest TM_HTTP_CHUNK) of JSON whitespace: the sniff for a safetensors
 * index looks at the bytes fetched, not past them (under ASan this read one byte past the
 * head). */
Test(remote_answers, a_whitespace_head_is_sniffed_within_the_bytes_fetched)
{
    char path[512];
    snprintf(path, sizeof path, "%s/spaces.json", root);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    for (int i = 0; i < 4096; i++)
        fputc(' ', f);
    fputs("{\"weight_map\": {}}", f);
    cr_assert_eq(fclose(f), 0);
    setenv("TM_HTTP_CHUNK", "4K", 1);
    tm_file *file = NULL;
    tm_error err;
    cr_expect_eq(tm_open(url("files/spaces.json"), 0, &file, &err), TM_NOT_MODEL, "%s",
                 err.message);
    tm_close(file);
}
