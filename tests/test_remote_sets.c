/* Remote sets of files: a split GGUF set or a sharded safetensors checkpoint served by the test
 * server (tests/support/http_server.py) on 127.0.0.1. TM_HTTP_HEAD_LIMIT bounds what a
 * header-only command transfers for the whole model, not for each of its files: the bound is
 * checked against the body bytes the server logged, not against what the tool says. */
#include "support/helpers.h"
#include "support/http_serve.h"
#include "support/st_writer.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define KiB 1024ull
#define N_SHARDS 128
/* Each shard's one tensor: 64 KiB of f32, so that 128 shards fetched whole are 8 MiB. */
#define TENSOR_FLOATS 16384u

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

TestSuite(remote_sets, .init = suite_init, .fini = suite_fini, .timeout = 60);

/* "http://127.0.0.1:PORT/files/NAME" (static storage). */
static const char *url(const char *name)
{
    static char u[512];
    snprintf(u, sizeof u, "http://127.0.0.1:%d/files/%s", srv.port, name);
    return u;
}

/* Shard i of a GGUF split set of n, ROOT/set-0000I-of-0000N.gguf: the three split keys and one
 * f32 tensor "t.I" of TENSOR_FLOATS zeros. */
static void write_gguf_shard(uint32_t i, uint32_t n)
{
    tb b = {0};
    tb_head(&b, 3, 1, 3);
    const uint16_t no = (uint16_t)i, count = (uint16_t)n;
    tb_kv_head(&b, "split.no", TM_V_U16);
    tb_bytes(&b, &no, 2);
    tb_kv_head(&b, "split.count", TM_V_U16);
    tb_bytes(&b, &count, 2);
    tb_kv_head(&b, "split.tensors.count", TM_V_I32);
    tb_u32(&b, n);
    char name[32], path[512];
    snprintf(name, sizeof name, "t.%u", i);
    const uint64_t ne[1] = {TENSOR_FLOATS};
    tb_info(&b, name, 1, ne, TM_TYPE_F32, 0);
    tb_pad(&b, TM_DEFAULT_ALIGNMENT);
    tb_zeros(&b, TENSOR_FLOATS * 4);
    snprintf(path, sizeof path, "%s/set-%05u-of-%05u.gguf", root, i + 1, n);
    cr_assert_eq(tb_write(&b, path), 0, "%s", path);
    tb_free(&b);
}

static void write_gguf_set(uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        write_gguf_shard(i, n);
}

/* A safetensors checkpoint of n shards, ROOT/model-0000I-of-0000N.safetensors, one F32 tensor
 * "w.I" each, and its model.safetensors.index.json. */
static void write_st_checkpoint(uint32_t n)
{
    static float zeros[TENSOR_FLOATS];
    const uint64_t shape[1] = {TENSOR_FLOATS};
    json_t *wm = json_object();
    for (uint32_t i = 0; i < n; i++) {
        char name[32], file[64], path[512];
        snprintf(name, sizeof name, "w.%u", i);
        snprintf(file, sizeof file, "model-%05u-of-%05u.safetensors", i + 1, n);
        snprintf(path, sizeof path, "%s/%s", root, file);
        st_writer *w = st_writer_new();
        st_writer_add(w, name, "F32", 1, shape, zeros, sizeof zeros);
        cr_assert_eq(st_writer_write(w, path), 0, "%s", path);
        st_writer_free(w);
        json_object_set_new(wm, name, json_string(file));
    }
    json_t *index = json_pack("{s:{}, s:o}", "metadata", "weight_map", wm);
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", root);
    cr_assert_eq(json_dump_file(index, path, 0), 0, "%s", path);
    json_decref(index);
}

/* Run `info --json` on the URL with TM_HTTP_HEAD_LIMIT at limit; the body bytes the server
 * sent go to *bytes. */
static tool_result info_with_limit(const char *u, const char *limit, uint64_t *bytes)
{
    setenv("TM_HTTP_HEAD_LIMIT", limit, 1);
    const size_t mark = server_log_mark(&srv);
    tool_result r = tool_run("info", "--json", u, NULL);
    unsetenv("TM_HTTP_HEAD_LIMIT");
    uint64_t requests;
    server_traffic_since(&srv, mark, bytes, &requests);
    return r;
}

static void expect_opens(tool_result *r, uint64_t bytes, uint64_t limit, uint32_t n_shards)
{
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_leq(bytes, limit, "%llu bytes sent, over the limit of %llu for the whole model",
                  (unsigned long long)bytes, (unsigned long long)limit);
    json_error_t e;
    json_t *j = json_loads(r->out, 0, &e);
    cr_assert_not_null(j, "%s", e.text);
    cr_assert_eq(json_u64(j, "n_shards"), n_shards);
    cr_assert_eq(json_u64(j, "n_tensors"), n_shards);
    json_decref(j);
}

/* 128 shards of 64 KiB each, with 1 MiB of head for the whole set: every shard's header fits
 * in its share (the first request of each is a fair share of what is left, not a whole chunk
 * of 2 MiB that would fetch the shard whole). */
Test(remote_sets, a_split_set_of_128_shards_transfers_at_most_one_head_limit)
{
    write_gguf_set(N_SHARDS);
    uint64_t bytes;
    tool_result r = info_with_limit(url("set-00001-of-00128.gguf"), "1M", &bytes);
    expect_opens(&r, bytes, 1024 * KiB, N_SHARDS);
    tool_result_free(&r);
}

Test(remote_sets, a_safetensors_index_of_128_shards_transfers_at_most_one_head_limit)
{
    write_st_checkpoint(N_SHARDS);
    uint64_t bytes;
    tool_result r = info_with_limit(url("model.safetensors.index.json"), "1M", &bytes);
    expect_opens(&r, bytes, 1024 * KiB, N_SHARDS);
    tool_result_free(&r);
}

/* A limit too small for the set: the command stops with the limit's message, naming the shard
 * it stopped at, having transferred no more than the limit. */
Test(remote_sets, a_limit_too_small_for_the_set_stops_within_it)
{
    write_gguf_set(N_SHARDS);
    uint64_t bytes;
    tool_result r = info_with_limit(url("set-00001-of-00128.gguf"), "256K", &bytes);
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_assert(strstr(r.err, "TM_HTTP_HEAD_LIMIT") && strstr(r.err, "-of-00128.gguf"), "%s",
              r.err);
    cr_assert_leq(bytes, 256 * KiB, "%llu bytes sent", (unsigned long long)bytes);
    tool_result_free(&r);
}
