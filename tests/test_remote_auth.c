/* Where HF_TOKEN goes: to the scheme, host and port of HF_ENDPOINT, and nowhere else. The server
 * (tests/support/http_server.py) speaks HTTPS and plain HTTP on one port, so that a redirect
 * from https:// to http:// on the same host and port can be followed, and logs for every
 * request whether it came over TLS and what Authorization it carried. */
#include "support/http_serve.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TOKEN "hf_remote_auth_test"

static server srv;
static char root[256], cert_path[256], key_path[256];

static void suite_init(void)
{
    clean_environment();
    snprintf(root, sizeof root, "%s/root", test_dir());
    cr_assert(mkdir(root, 0700) == 0 || errno == EEXIST, "mkdir %s", root);
    char *failed = server_make_cert(cert_path, key_path);
    if (!failed)
        failed = server_try_start(&srv, root, "secure", cert_path, key_path);
    if (failed) { /* Criterion runs no .fini after a failed .init: clean up here */
        test_cleanup();
        cr_assert_fail("%s", failed);
    }
    setenv("CURL_CA_BUNDLE", cert_path, 1);
    setenv("HF_TOKEN", TOKEN, 1);
    /* small steps, so that the header walk and the tensor reads make requests of their own
     * after the first one (which would otherwise bring the whole file) */
    setenv("TM_HTTP_CHUNK", "4K", 1);
}

static void suite_fini(void)
{
    server_stop(&srv);
    test_cleanup();
}

TestSuite(remote_auth, .init = suite_init, .fini = suite_fini, .timeout = 60);

static void set_endpoint(const char *scheme)
{
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "%s://127.0.0.1:%d", scheme, srv.port);
    setenv("HF_ENDPOINT", endpoint, 1);
}

static const char *str_of(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* Run `dump SCHEME://127.0.0.1:PORT/PATH q6_K.rows.weight` (the header, then a tensor read: a
 * request of its own) and return the requests it made. */
static json_t *dump_requests(const char *scheme, const char *path)
{
    char url[256];
    snprintf(url, sizeof url, "%s://127.0.0.1:%d/%s", scheme, srv.port, path);
    size_t mark = server_log_mark(&srv);
    tool_result r = tool_run("dump", url, "q6_K.rows.weight", "--format", "raw", "-o", "-", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_gt(r.out_len, 0);
    tool_result_free(&r);
    return server_log_since(&srv, mark);
}

/* An https endpoint's token is not sent over plain HTTP, even to its own host and port: a
 * redirect there (a man in the middle can forge one) would otherwise have every later range
 * carry it in the clear. */
Test(remote_auth, an_https_token_is_not_sent_over_plain_http)
{
    server_put_golden(root, "golden-a.gguf", "golden-a.gguf");
    set_endpoint("https");
    json_t *log = dump_requests("https", "redirect-plain/golden-a.gguf");
    char *text = json_dumps(log, JSON_INDENT(1));
    size_t i, plain = 0;
    json_t *e;
    json_array_foreach(log, i, e)
    {
        if (json_is_true(json_object_get(e, "tls")))
            continue;
        plain++;
        cr_expect(json_is_null(json_object_get(e, "authorization")),
                  "the token went over plain HTTP:\n%s", text);
    }
    cr_expect_geq(plain, 2, "the redirect was not followed over plain HTTP:\n%s", text);
    /* the first request, over TLS to the endpoint's own origin, did carry it */
    cr_expect_str_eq(str_of(json_array_get(log, 0), "authorization"), "Bearer " TOKEN, "%s",
                     text);
    free(text);
    json_decref(log);
}

/* An endpoint that is itself plain HTTP (a local mirror) gets its token over plain HTTP, on
 * every request; the same host and port over https:// is another origin, and does not. */
Test(remote_auth, a_plain_http_endpoint_gets_its_token_and_https_does_not)
{
    server_put_golden(root, "golden-a.gguf", "golden-a.gguf");
    set_endpoint("http");
    const char *const schemes[] = {"http", "https"};
    for (int k = 0; k < 2; k++) {
        json_t *log = dump_requests(schemes[k], "files/golden-a.gguf");
        char *text = json_dumps(log, JSON_INDENT(1));
        cr_expect_geq(json_array_size(log), 2, "%s", text);
        size_t i;
        json_t *e;
        json_array_foreach(log, i, e)
        {
            if (k == 0)
                cr_expect_str_eq(str_of(e, "authorization"), "Bearer " TOKEN, "%s", text);
            else
                cr_expect(json_is_null(json_object_get(e, "authorization")),
                          "the token went to https://, not the endpoint's origin:\n%s", text);
        }
        free(text);
        json_decref(log);
    }
}
