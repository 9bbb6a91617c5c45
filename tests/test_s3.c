/* s3:// names: the tool against a real S3-compatible server on 127.0.0.1 (s3rver, through
 * tests/support/s3/serve.js, which checks Signature V4 itself and keeps the bucket "private"
 * from unsigned requests), started for the suite and stopped after it. Its log has every
 * request with its range, the body bytes written and its Authorization and
 * x-amz-security-token headers, so the bounds on what a command transfers and where the
 * credentials went are checked against what went over the wire. Expected values come from the
 * local file through the same command, from ggml's view of the golden file
 * (golden-a.view.tsv), or are written here by hand. */
#include "support/s3_serve.h"
#include "support/st_writer.h"
#include "support/test_cli.h"

#include <tensormap.h>

#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK 4096 /* TM_HTTP_CHUNK here: the header walk and a tensor read are requests apart */

static server srv;
static char *not_running; /* why the server is not running, or NULL */

static void suite_init(void)
{
    clean_environment();
    static const char *const aws[] = {
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
        "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
        "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"};
    for (size_t i = 0; i < sizeof aws / sizeof aws[0]; i++)
        unsetenv(aws[i]);
    setenv("TM_HTTP_CHUNK", "4K", 1);
    not_running = s3_server_try_start(&srv);
    if (not_running)
        return;
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d", srv.port);
    setenv("AWS_ENDPOINT_URL_S3", endpoint, 1); /* never AWS itself */
    char golden[512];
    snprintf(golden, sizeof golden, "%s/golden/golden-a.gguf", getenv("TM_CORPUS"));
    s3_put(&srv, "models", "dir/golden-a.gguf", golden);
    s3_put(&srv, "private", "golden-a.gguf", golden);
}

static void suite_fini(void)
{
    server_stop(&srv);
    free(not_running);
    test_cleanup();
}

TestSuite(s3, .init = suite_init, .fini = suite_fini, .timeout = 60);

/* Every test starts here: skipped, saying why, when the server could not run. */
static void need_server(void)
{
    if (not_running)
        cr_skip_test("the S3 test server cannot run: %s", not_running);
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_PROFILE");
}

static void sign_with(const char *key, const char *secret)
{
    setenv("AWS_ACCESS_KEY_ID", key, 1);
    setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
}

static const char *str_of(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* The golden file's data start and a tensor's place in it, as ggml's view gives them. */
static void golden_place(const char *tensor, uint64_t *data_start, uint64_t *off, uint64_t *size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/golden/golden-a.view.tsv", getenv("TM_CORPUS"));
    char *view = read_all(path, NULL);
    *data_start = *off = *size = 0;
    for (char *line = strtok(view, "\n"); line; line = strtok(NULL, "\n")) {
        char name[128];
        unsigned long long a, b;
        if (sscanf(line, "data_offset %llu", &a) == 1)
            *data_start = a;
        else if (sscanf(line, "tensor %127s %*s %*s %*s %*s %*s %llu %llu", name, &a, &b) == 3 &&
                 strcmp(name, tensor) == 0) {
            *off = a;
            *size = b;
        }
    }
    free(view);
    cr_assert(*data_start > 0 && *size > 0, "%s: no tensor %s", path, tensor);
}

/* Run `info u`, which must succeed, and return the requests it made (at least one). */
static json_t *info_requests(const char *u)
{
    size_t mark = server_log_mark(&srv);
    tool_result r = tool_run("info", u, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    json_t *log = server_log_since(&srv, mark);
    cr_assert_geq(json_array_size(log), 1);
    return log;
}

/* The failure a command must end in: status 1, the words in its message, no secret in it. */
static void expect_refused(tool_result *r, const char *words, const char *secret)
{
    cr_expect_eq(r->status, 1, "status %d: %s", r->status, r->err);
    cr_expect(strstr(r->err, words), "the message does not say '%s': %s", words, r->err);
    cr_expect(!strstr(r->err, secret) && !strstr(r->out, secret),
              "the secret was printed: %s%s", r->out, r->err);
}

/* ---- a good key -------------------------------------------------------------------------- */

/* info and tensors with s3rver's key pair, every request signed with it; a tensor's dump is the
 * local file's bit for bit; the header commands fetch at most the header and one chunk, the
 * dump only the tensor's byte range beyond that. */
Test(s3, a_signed_object_reads_as_the_local_file_within_the_transfer_bounds)
{
    need_server();
    sign_with(S3_KEY, S3_SECRET);
    const char *u = "s3://models/dir/golden-a.gguf";
    char local[512];
    snprintf(local, sizeof local, "%s/golden/golden-a.gguf", getenv("TM_CORPUS"));
    uint64_t data_start, t_off, t_size;
    golden_place("q6_K.rows.weight", &data_start, &t_off, &t_size);

    const char *const header_commands[] = {"info", "tensors"};
    for (int k = 0; k < 2; k++) {
        size_t mark = server_log_mark(&srv);
        tool_result r = tool_run(header_commands[k], u, NULL), l = tool_run(header_commands[k],
                                                                            local, NULL);
        cr_assert_eq(r.status, 0, "%s", r.err);
        if (k == 1)
            cr_expect_str_eq(r.out, l.out, "tensors over s3:// differ from the local file's");
        tool_result_free(&r);
        tool_result_free(&l);
        uint64_t bytes, requests;
        server_traffic_since(&srv, mark, &bytes, &requests);
        cr_expect_leq(bytes, data_start + CHUNK, "%s fetched %llu bytes", header_commands[k],
                      (unsigned long long)bytes);
        cr_expect_geq(requests, 1);
    }

    size_t mark = server_log_mark(&srv);
    tool_result r = tool_run("dump", u, "q6_K.rows.weight", "--format", "raw", "-o", "-", NULL);
    tool_result l = tool_run("dump", local, "q6_K.rows.weight", "--format", "raw", "-o", "-", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(r.out_len, l.out_len);
    cr_assert_eq(memcmp(r.out, l.out, l.out_len), 0, "the s3:// dump differs from the local one");
    tool_result_free(&r);
    tool_result_free(&l);
    json_t *log = server_log_since(&srv, mark);
    char *text = json_dumps(log, JSON_INDENT(1));
    const uint64_t t0 = data_start + t_off, t1 = t0 + t_size;
    uint64_t head = 0, data = 0;
    size_t i;
    json_t *e;
    json_array_foreach(log, i, e)
    {
        unsigned long long a, b;
        cr_assert_eq(sscanf(str_of(e, "range"), "bytes=%llu-%llu", &a, &b), 2, "%s", text);
        cr_assert_eq(json_u64(e, "status"), 206, "%s", text);
        cr_assert(strstr(str_of(e, "authorization"), "AWS4-HMAC-SHA256 Credential=" S3_KEY "/"),
                  "a request went unsigned:\n%s", text);
        if (a < data_start) {
            head += json_u64(e, "bytes");
        } else {
            cr_assert(a >= t0 && b < t1, "bytes %llu-%llu are not the tensor's:\n%s", a, b, text);
            data += json_u64(e, "bytes");
        }
    }
    cr_expect_leq(head, data_start + CHUNK, "%s", text);
    cr_expect_eq(data, t_size, "%s", text);
    free(text);
    json_decref(log);
}

/* The key is sent percent-encoded, '/' kept, and signed so (the server checks the signature
 * over the path as sent). */
Test(s3, a_key_with_spaces_and_plus_is_percent_encoded)
{
    need_server();
    sign_with(S3_KEY, S3_SECRET);
    char golden[512];
    snprintf(golden, sizeof golden, "%s/golden/golden-a.gguf", getenv("TM_CORPUS"));
    s3_put(&srv, "models", "odd dir/a+b c.gguf", golden);
    json_t *log = info_requests("s3://models/odd dir/a+b c.gguf");
    cr_expect_str_eq(str_of(json_array_get(log, 0), "path"), "/models/odd%20dir/a%2Bb%20c.gguf");
    json_decref(log);
}

/* ---- refusals ---------------------------------------------------------------------------- */

#define WRONG_SECRET "tm-s3-test-wrong-secret-7f3a"

Test(s3, a_wrong_secret_is_signature_does_not_match_and_is_never_printed)
{
    need_server();
    sign_with(S3_KEY, WRONG_SECRET);
    tool_result r = tool_run("info", "s3://models/dir/golden-a.gguf", NULL);
    expect_refused(&r, "SignatureDoesNotMatch: the secret key does not match the access key: "
                       "check AWS_SECRET_ACCESS_KEY", WRONG_SECRET);
    tool_result_free(&r);
    r = tool_run("info", "--json", "s3://models/dir/golden-a.gguf", NULL);
    expect_refused(&r, "SignatureDoesNotMatch", WRONG_SECRET);
    tool_result_free(&r);
    tm_file *f = NULL;
    tm_error err;
    cr_expect_eq(tm_open("s3://models/dir/golden-a.gguf", 0, &f, &err), TM_IO);
    cr_expect(!strstr(err.message, WRONG_SECRET), "%s", err.message);
}

Test(s3, an_unknown_access_key_is_named)
{
    need_server();
    sign_with("AKIATMNOSUCHKEY", WRONG_SECRET);
    tool_result r = tool_run("info", "s3://models/dir/golden-a.gguf", NULL);
    expect_refused(&r, "InvalidAccessKeyId: the server knows no such access key: check "
                       "AWS_ACCESS_KEY_ID", WRONG_SECRET);
    tool_result_free(&r);
}

Test(s3, a_missing_object_is_no_such_key_and_not_found)
{
    need_server();
    sign_with(S3_KEY, S3_SECRET);
    tool_result r = tool_run("info", "s3://models/dir/nothing-here.gguf", NULL);
    expect_refused(&r, "HTTP 404: NoSuchKey", WRONG_SECRET);
    tool_result_free(&r);
    tm_file *f = NULL;
    tm_error err;
    cr_expect_eq(tm_open("s3://models/dir/nothing-here.gguf", 0, &f, &err), TM_NOT_FOUND, "%s",
                 err.message);
}

Test(s3, a_missing_bucket_is_no_such_bucket_and_not_found)
{
    need_server();
    tool_result r = tool_run("info", "s3://no-such-bucket/x.gguf", NULL);
    expect_refused(&r, "HTTP 404: NoSuchBucket", WRONG_SECRET);
    tool_result_free(&r);
    tm_file *f = NULL;
    tm_error err;
    cr_expect_eq(tm_open("s3://no-such-bucket/x.gguf", 0, &f, &err), TM_NOT_FOUND);
}

/* Without credentials the requests go unsigned: a public bucket reads, the private one refuses
 * (AccessDenied, saying what to set), and reads with the key pair. */
Test(s3, anonymous_access_reads_a_public_bucket_and_is_refused_by_a_private_one)
{
    need_server();
    json_t *log = info_requests("s3://models/dir/golden-a.gguf");
    cr_expect(json_is_null(json_object_get(json_array_get(log, 0), "authorization")));
    json_decref(log);
    tool_result r = tool_run("info", "s3://private/golden-a.gguf", NULL);
    expect_refused(&r, "HTTP 403: AccessDenied: the bucket is not public, and no credentials "
                       "are set", WRONG_SECRET);
    tool_result_free(&r);
    sign_with(S3_KEY, S3_SECRET);
    r = tool_run("info", "s3://private/golden-a.gguf", NULL);
    cr_expect_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
}

/* AWS_SESSION_TOKEN goes as x-amz-security-token, signed with the rest. */
Test(s3, the_session_token_is_sent_and_signed)
{
    need_server();
    sign_with(S3_KEY, S3_SECRET);
    setenv("AWS_SESSION_TOKEN", "tm-session-token-1", 1);
    json_t *log = info_requests("s3://models/dir/golden-a.gguf");
    const json_t *e = json_array_get(log, 0);
    cr_expect_str_eq(str_of(e, "token"), "tm-session-token-1");
    cr_expect(strstr(str_of(e, "authorization"), "x-amz-security-token"),
              "the token is not among the signed headers: %s", str_of(e, "authorization"));
    json_decref(log);
}

/* ---- profiles ---------------------------------------------------------------------------- */

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* HOME is the test's directory (clean_environment): ~/.aws/credentials and ~/.aws/config are
 * read from there; AWS_PROFILE picks a section, the config file its region. */
Test(s3, aws_profile_reads_the_credentials_and_config_files_under_home)
{
    need_server();
    char aws[512], creds[600], config[600];
    snprintf(aws, sizeof aws, "%s/.aws", getenv("HOME"));
    cr_assert(mkdir(aws, 0700) == 0 || errno == EEXIST, "%s", aws);
    snprintf(creds, sizeof creds, "%s/credentials", aws);
    snprintf(config, sizeof config, "%s/config", aws);
    write_text(creds, "# test profiles\n[default]\naws_access_key_id = " S3_KEY "\n"
                      "aws_secret_access_key = " WRONG_SECRET "\n\n[tm]\n"
                      "aws_access_key_id=" S3_KEY "\r\naws_secret_access_key = " S3_SECRET "\n");
    write_text(config, "[default]\nregion = us-west-2\n; comment\n[profile tm]\n"
                       "region = eu-west-3\n");
    setenv("AWS_PROFILE", "tm", 1);
    json_t *log = info_requests("s3://private/golden-a.gguf");
    cr_expect(strstr(str_of(json_array_get(log, 0), "authorization"),
                     "Credential=" S3_KEY "/"),
              "%s", str_of(json_array_get(log, 0), "authorization"));
    cr_expect(strstr(str_of(json_array_get(log, 0), "authorization"), "/eu-west-3/s3/"),
              "not signed for the profile's region: %s",
              str_of(json_array_get(log, 0), "authorization"));
    json_decref(log);
    /* the default profile's secret is wrong: the message names the profile and the file */
    unsetenv("AWS_PROFILE");
    tool_result r = tool_run("info", "s3://private/golden-a.gguf", NULL);
    expect_refused(&r, "SignatureDoesNotMatch", WRONG_SECRET);
    cr_expect(strstr(r.err, "check aws_secret_access_key of the profile 'default' in '") &&
                  strstr(r.err, "/.aws/credentials"), "%s", r.err);
    tool_result_free(&r);
    setenv("AWS_PROFILE", "nobody", 1);
    r = tool_run("info", "s3://private/golden-a.gguf", NULL);
    expect_refused(&r, "AWS_PROFILE names the profile 'nobody'", WRONG_SECRET);
    tool_result_free(&r);
    /* the environment's key pair wins over the default profile's (whose secret is wrong); the
     * config file still gives the region */
    unsetenv("AWS_PROFILE");
    sign_with(S3_KEY, S3_SECRET);
    log = info_requests("s3://private/golden-a.gguf");
    cr_expect(strstr(str_of(json_array_get(log, 0), "authorization"), "/us-west-2/s3/"),
              "not signed for the config file's region: %s",
              str_of(json_array_get(log, 0), "authorization"));
    json_decref(log);
    cr_assert_eq(unlink(creds), 0);
    cr_assert_eq(unlink(config), 0);
}

/* A credentials file that is not one (a line of neither form, a NUL byte, megabytes) is
 * refused with its line or byte named, and never crashes or reads past it. */
Test(s3, a_hostile_credentials_file_is_refused_clearly)
{
    need_server();
    const char *path = test_path("hostile-credentials");
    setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
    setenv("AWS_CONFIG_FILE", test_path("no-such-config"), 1);
    write_text(path, "[default]\naws_access_key_id = A\nthis is not ini\n");
    tool_result r = tool_run("info", "s3://models/dir/golden-a.gguf", NULL);
    expect_refused(&r, "line 3: neither [section], KEY = VALUE nor a comment", WRONG_SECRET);
    tool_result_free(&r);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fwrite("[default]\naws_access_key_id = A\0B\n", 1, 34, f);
    cr_assert_eq(fclose(f), 0);
    r = tool_run("info", "s3://models/dir/golden-a.gguf", NULL);
    expect_refused(&r, "holds a NUL byte at byte 31", WRONG_SECRET);
    tool_result_free(&r);
    f = fopen(path, "wb");
    cr_assert_not_null(f);
    fputc('[', f); /* 3 MiB of one long unterminated section header */
    for (int i = 0; i < 3 << 20; i++)
        fputc('a', f);
    cr_assert_eq(fclose(f), 0);
    r = tool_run("info", "s3://models/dir/golden-a.gguf", NULL);
    expect_refused(&r, "larger than 1048576 bytes", WRONG_SECRET);
    tool_result_free(&r);
    /* a region goes into the host name and the signature: one that is not a region is refused */
    write_text(path, "[default]\n");
    write_text(test_path("config"), "[default]\nregion = us-east-1.evil.example/x\n");
    setenv("AWS_CONFIG_FILE", test_path("config"), 1);
    r = tool_run("info", "s3://models/dir/golden-a.gguf", NULL);
    expect_refused(&r, "the region 'us-east-1.evil.example/x' is not one", WRONG_SECRET);
    tool_result_free(&r);
    unsetenv("AWS_SHARED_CREDENTIALS_FILE");
    unsetenv("AWS_CONFIG_FILE");
}

/* Without an endpoint the object is at https://BUCKET.s3.REGION.amazonaws.com/KEY: the name is
 * never looked up (the resolver shim knows only localhost), the message shows the URL. */
Test(s3, without_an_endpoint_the_url_is_virtual_hosted_on_aws)
{
    need_server();
    char endpoint[128];
    snprintf(endpoint, sizeof endpoint, "%s", getenv("AWS_ENDPOINT_URL_S3"));
    unsetenv("AWS_ENDPOINT_URL_S3");
    setenv("AWS_REGION", "eu-central-1", 1);
    preload_resolve_shim();
    tool_result r = tool_run("info", "s3://models/dir/golden-a.gguf", NULL);
    unsetenv("LD_PRELOAD");
    setenv("AWS_ENDPOINT_URL_S3", endpoint, 1);
    unsetenv("AWS_REGION");
    expect_refused(&r, "https://models.s3.eu-central-1.amazonaws.com/dir/golden-a.gguf",
                   WRONG_SECRET);
    cr_expect(strstr(r.err, "no_resolve: models.s3.eu-central-1.amazonaws.com"), "%s", r.err);
    tool_result_free(&r);
}

/* ---- sets of files ------------------------------------------------------------------------ */

/* A split set opens from its first shard's s3:// name: the others are s3:// names beside it,
 * signed as it is. */
Test(s3, a_split_set_opens_across_its_shards_over_s3)
{
    need_server();
    sign_with(S3_KEY, S3_SECRET);
    char src[512], prefix[512];
    snprintf(src, sizeof src, "%s/golden/golden-a.gguf", getenv("TM_CORPUS"));
    snprintf(prefix, sizeof prefix, "%s/golden-a", test_dir());
    tool_result r = tool_run("split", "--max-tensors", "20", src, prefix, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    for (int i = 1; i <= 3; i++) {
        char local[600], key[64];
        snprintf(local, sizeof local, "%s-%05d-of-00003.gguf", prefix, i);
        snprintf(key, sizeof key, "split/golden-a-%05d-of-00003.gguf", i);
        s3_put(&srv, "private", key, local);
    }
    size_t mark = server_log_mark(&srv);
    json_t *remote = tool_json(0, "info", "--json", "s3://private/split/golden-a-00001-of-00003.gguf",
                               NULL);
    json_t *local = tool_json(0, "info", "--json", src, NULL);
    cr_expect_eq(json_u64(remote, "n_shards"), 3);
    cr_expect_eq(json_u64(remote, "n_tensors"), json_u64(local, "n_tensors"));
    json_decref(remote);
    json_decref(local);
    json_t *log = server_log_since(&srv, mark);
    char *text = json_dumps(log, JSON_INDENT(1));
    for (int i = 1; i <= 3; i++) {
        char want[80];
        snprintf(want, sizeof want, "\"/private/split/golden-a-%05d-of-00003.gguf\"", i);
        cr_expect(strstr(text, want), "shard %d was not fetched:\n%s", i, text);
    }
    size_t i;
    json_t *e;
    json_array_foreach(log, i, e)
        cr_expect_eq(json_u64(e, "status"), 206, "a shard went unsigned:\n%s", text);
    free(text);
    json_decref(log);
}

/* A sharded safetensors checkpoint opens through its index's s3:// name. */
Test(s3, a_safetensors_index_opens_across_its_shards_over_s3)
{
    need_server();
    sign_with(S3_KEY, S3_SECRET);
    /* shard i holds model.layers.i.w, 3 floats of its own */
    const float values[2][3] = {{1.5f, -2.0f, 0.25f}, {7, 6, 5}};
    const uint64_t shape[1] = {3};
    for (int i = 0; i < 2; i++) {
        char name[32], file[64], key[80];
        snprintf(name, sizeof name, "model.layers.%d.w", i);
        snprintf(file, sizeof file, "model-%05d-of-00002.safetensors", i + 1);
        snprintf(key, sizeof key, "st/%s", file);
        st_writer *w = st_writer_new();
        st_writer_add(w, name, "F32", 1, shape, values[i], sizeof values[i]);
        cr_assert_eq(st_writer_write(w, test_path(file)), 0);
        st_writer_free(w);
        s3_put(&srv, "private", key, test_path(file));
    }
    const char *index = test_path("model.safetensors.index.json");
    write_text(index, "{\"metadata\": {}, \"weight_map\": {"
                      "\"model.layers.0.w\": \"model-00001-of-00002.safetensors\", "
                      "\"model.layers.1.w\": \"model-00002-of-00002.safetensors\"}}");
    s3_put(&srv, "private", "st/model.safetensors.index.json", index);
    const char *u = "s3://private/st/model.safetensors.index.json";
    json_t *j = tool_json(0, "info", "--json", u, NULL);
    cr_expect_eq(json_u64(j, "n_shards"), 2);
    json_decref(j);
    tool_result r = tool_run("dump", u, "model.layers.1.w", "--format", "raw", "-o", "-", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(r.out_len, sizeof values[1]);
    cr_expect_eq(memcmp(r.out, values[1], sizeof values[1]), 0);
    tool_result_free(&r);
}

/* ---- where the credentials go ------------------------------------------------------------- */

/* An endpoint that redirects elsewhere (here the HTTP test server's /redirect-host/, a 302 to
 * the other loopback name): the signed request is not followed there, so neither the signature
 * nor the session token reach the other host, and the answer is one clear refusal. */
Test(s3, a_redirect_is_not_followed_with_the_credentials)
{
    need_server();
    server web;
    char root[256];
    snprintf(root, sizeof root, "%s/web", test_dir());
    cr_assert(mkdir(root, 0700) == 0 || errno == EEXIST, "mkdir %s", root);
    char *failed = server_try_start(&web, root, "web", NULL, NULL);
    cr_assert_null(failed, "%s", failed);
    char endpoint[96];
    snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d/redirect-host", web.port);
    setenv("AWS_ENDPOINT_URL_S3", endpoint, 1);
    sign_with(S3_KEY, WRONG_SECRET);
    setenv("AWS_SESSION_TOKEN", "tm-session-token-2", 1);
    size_t mark = server_log_mark(&web);
    tool_result r = tool_run("info", "s3://models/golden-a.gguf", NULL);
    expect_refused(&r, "HTTP 302: a redirect, which an S3 request does not follow", WRONG_SECRET);
    tool_result_free(&r);
    json_t *log = server_log_since(&web, mark);
    char *text = json_dumps(log, JSON_INDENT(1));
    cr_expect_eq(json_array_size(log), 1, "the redirect was followed:\n%s", text);
    cr_expect(strstr(str_of(json_array_get(log, 0), "authorization"), "AWS4-HMAC-SHA256"),
              "the endpoint's own request was not signed:\n%s", text);
    free(text);
    json_decref(log);
    server_stop(&web);
}
