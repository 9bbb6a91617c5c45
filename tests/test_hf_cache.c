/* hf: names found in the Hugging Face hub cache: a cache laid out here by hand as
 * huggingface_hub lays it out (refs/REVISION, snapshots/COMMIT/FILE a relative symlink to
 * ../../blobs/ETAG), the local HTTP server running as the Hub (HF_ENDPOINT), and its log saying
 * that a cached file costs no request at all. Under HF_HUB_OFFLINE the server is not needed:
 * nothing may reach it. */
#include "support/http_serve.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static server srv;
static char root[256];

#define COMMIT_A "0123456789abcdef0123456789abcdef01234567"
#define COMMIT_B "89abcdef0123456789abcdef0123456789abcdef"

static void suite_init(void) { server_suite_start_hub(&srv, root); }

static void suite_fini(void) { server_suite_stop(&srv); }

TestSuite(hf_cache, .init = suite_init, .fini = suite_fini, .timeout = 60);

static const char *golden(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/golden/%s", getenv("TM_CORPUS"), name);
    return path;
}

/* The cache directory, $HOME/.cache/huggingface/hub (HOME is the test's directory). */
static const char *cache(void)
{
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/.cache/huggingface/hub", test_dir());
    return dir;
}

/* FILE of commit in models--tm--cache, a symlink to a blob holding a copy of src (the blob named
 * after the commit and file, as a test needs no real ETag). */
static void put(const char *commit, const char *file, const char *src)
{
    free(shell_ok(
        "d=%s/models--tm--cache && mkdir -p $d/blobs $d/snapshots/%s && cp %s $d/blobs/%s-%s && "
        "ln -s ../../blobs/%s-%s $d/snapshots/%s/%s",
        cache(), commit, src, commit, file, commit, file, commit, file));
}

static void ref(const char *name, const char *commit)
{
    free(shell_ok(
        "mkdir -p %s/models--tm--cache/refs && printf %%s %s > %s/models--tm--cache/refs/%s",
        cache(), commit, cache(), name));
}

/* `info --json` of name: it must succeed, with no request to the server and nothing fetched. */
static json_t *info_cached(const char *name)
{
    const size_t mark = server_log_mark(&srv);
    json_t *j = tool_json(0, "info", "--json", name, NULL);
    uint64_t bytes, requests;
    server_traffic_since(&srv, mark, &bytes, &requests);
    cr_assert_eq(requests, 0, "%s: %" PRIu64 " requests to the server", name, requests);
    cr_assert_null(json_object_get(j, "fetched"), "%s reads as remote", name);
    return j;
}

/* Whether `info name` (which must succeed) says it fetched anything. */
static bool info_says_fetched(const char *name)
{
    tool_result r = tool_run("info", name, NULL);
    cr_assert_eq(r.status, 0, "%s: %s", name, r.err);
    const bool fetched = strstr(r.out, "fetched") != NULL;
    tool_result_free(&r);
    return fetched;
}

static uint64_t file_size(const char *path)
{
    size_t n;
    free(read_all(path, &n));
    return n;
}

Test(hf_cache, a_cached_file_opens_with_no_request)
{
    put(COMMIT_A, "m.gguf", golden("golden-a.gguf"));
    ref("main", COMMIT_A);
    json_t *j = info_cached("hf:tm/cache/m.gguf");
    cr_assert_eq(json_u64(j, "file_size"), file_size(golden("golden-a.gguf")));
    json_decref(j);
    cr_assert(!info_says_fetched("hf:tm/cache/m.gguf"), "info says it fetched");
}

Test(hf_cache, a_revision_resolves_through_refs_or_as_a_commit)
{
    put(COMMIT_A, "m.gguf", golden("golden-a.gguf"));
    put(COMMIT_B, "m.gguf", golden("golden-b.gguf"));
    ref("main", COMMIT_A);
    ref("v2", COMMIT_B);
    const uint64_t a = file_size(golden("golden-a.gguf")), b = file_size(golden("golden-b.gguf"));
    cr_assert_neq(a, b, "the two files must differ for the test to tell them apart");
    static const struct {
        const char *name;
        bool is_b;
    } cases[] = {{"hf:tm/cache/m.gguf", false},
                 {"hf:tm/cache/m.gguf@main", false},
                 {"hf:tm/cache/m.gguf@v2", true},
                 {"hf:tm/cache/m.gguf@" COMMIT_A, false},
                 {"hf:tm/cache/m.gguf@" COMMIT_B, true}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *j = info_cached(cases[i].name);
        cr_expect_eq(json_u64(j, "file_size"), cases[i].is_b ? b : a, "%s", cases[i].name);
        json_decref(j);
    }
}

Test(hf_cache, the_cache_is_found_where_huggingface_hub_looks)
{
    put(COMMIT_A, "m.gguf", golden("golden-a.gguf"));
    ref("main", COMMIT_A);
    /* the same tree moved under HF_HOME/hub, then HF_HUB_CACHE: each is found */
    char home[512], hub[512];
    snprintf(home, sizeof home, "%s/hfhome", test_dir());
    snprintf(hub, sizeof hub, "%s/elsewhere", test_dir());
    free(shell_ok("mkdir -p %s && mv %s %s/hub", home, cache(), home));
    setenv("HF_HOME", home, 1);
    json_decref(info_cached("hf:tm/cache/m.gguf"));
    free(shell_ok("mv %s/hub %s", home, hub));
    setenv("HF_HUB_CACHE", hub, 1);
    json_decref(info_cached("hf:tm/cache/m.gguf"));
    unsetenv("HF_HOME");
    unsetenv("HF_HUB_CACHE");
}

Test(hf_cache, a_split_set_opens_from_the_same_snapshot)
{
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s/split/golden-a", test_dir());
    free(shell_ok("mkdir -p %s/split", test_dir()));
    tool_result r = tool_run("split", "--max-tensors", "20", golden("golden-a.gguf"), prefix, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    for (int i = 1; i <= 3; i++) {
        char name[64], src[600];
        snprintf(name, sizeof name, "golden-a-%05d-of-00003.gguf", i);
        snprintf(src, sizeof src, "%s-%05d-of-00003.gguf", prefix, i);
        put(COMMIT_A, name, src);
    }
    ref("main", COMMIT_A);
    json_t *j = info_cached("hf:tm/cache/golden-a-00001-of-00003.gguf");
    cr_assert_eq(json_u64(j, "n_shards"), 3);
    json_t *whole = tool_json(0, "info", "--json", golden("golden-a.gguf"), NULL);
    cr_assert_eq(json_u64(j, "n_tensors"), json_u64(whole, "n_tensors"));
    const char *second =
        json_string_value(json_object_get(json_array_get(json_object_get(j, "shards"), 1), "path"));
    cr_assert(second && strstr(second, "/snapshots/" COMMIT_A "/golden-a-00002-of-00003.gguf"),
              "the second shard is %s", second ? second : "(none)");
    json_decref(whole);
    json_decref(j);
}

/* HF_HUB_OFFLINE as huggingface_hub reads it: 1, true, yes (any case). */
Test(hf_cache, offline_a_file_not_cached_is_refused_naming_where_it_was_looked_for)
{
    put(COMMIT_A, "m.gguf", golden("golden-a.gguf"));
    ref("main", COMMIT_A);
    /* the server has the file: a request would find it */
    free(shell_ok("mkdir -p %s/hf/tm/cache/main && cp %s %s/hf/tm/cache/main/other.gguf", root,
                  golden("golden-a.gguf"), root));
    static const char *const values[] = {"1", "true", "YES"};
    for (size_t i = 0; i < 3; i++) {
        setenv("HF_HUB_OFFLINE", values[i], 1);
        const size_t mark = server_log_mark(&srv);
        tool_result r = tool_run("info", "hf:tm/cache/other.gguf", NULL);
        uint64_t bytes, requests;
        server_traffic_since(&srv, mark, &bytes, &requests);
        cr_expect_eq(r.status, 1, "HF_HUB_OFFLINE=%s: %s", values[i], r.out);
        cr_expect_eq(requests, 0, "HF_HUB_OFFLINE=%s went to the server", values[i]);
        cr_expect(strstr(r.err, "HF_HUB_OFFLINE") &&
                      strstr(r.err, "models--tm--cache/snapshots/" COMMIT_A "/other.gguf"),
                  "%s", r.err);
        tool_result_free(&r);
        r = tool_run("info", "hf:tm/cache/m.gguf@nosuchref", NULL);
        cr_expect_eq(r.status, 1);
        cr_expect(strstr(r.err, "models--tm--cache/refs/nosuchref"), "%s", r.err);
        tool_result_free(&r);
        json_decref(info_cached("hf:tm/cache/m.gguf")); /* what is cached still opens */
    }
    /* and without it, the Hub is asked */
    unsetenv("HF_HUB_OFFLINE");
    cr_expect(info_says_fetched("hf:tm/cache/other.gguf"), "the Hub was not asked");
}

/* A ref file is read from disk: junk, or a file far too long, is refused, not followed. */
Test(hf_cache, a_ref_that_is_not_a_commit_hash_is_refused)
{
    put(COMMIT_A, "m.gguf", golden("golden-a.gguf"));
    static const char *const junk[] = {"printf ../../../../etc", "printf '" COMMIT_A "x'",
                                       "head -c 1000000 /dev/zero | tr '\\0' a", "printf ''"};
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        free(shell_ok("mkdir -p %s/models--tm--cache/refs && %s > %s/models--tm--cache/refs/main",
                      cache(), junk[i], cache()));
        tool_result r = tool_run("info", "hf:tm/cache/m.gguf", NULL);
        cr_expect_eq(r.status, 1, "%s: %s", junk[i], r.out);
        cr_expect(strstr(r.err, "refs/main") && strstr(r.err, "commit hash"), "%s: %s", junk[i],
                  r.err);
        tool_result_free(&r);
    }
}

/* Names that would leave the cache's directories: refused under HF_HUB_OFFLINE, where there
 * is no Hub to ask instead, even with a file planted where they lead. */
Test(hf_cache, a_name_that_would_leave_the_cache_is_refused)
{
    put(COMMIT_A, "m.gguf", golden("golden-a.gguf"));
    ref("main", COMMIT_A);
    free(shell_ok(
        "cp %s %s/models--tm--cache/planted.gguf && mkdir -p %s/models--tm--cache/refs/x && "
        "printf %%s %s > %s/models--tm--cache/refs/x/y",
        golden("golden-a.gguf"), cache(), cache(), COMMIT_A, cache()));
    setenv("HF_HUB_OFFLINE", "1", 1);
    static const char *const names[] = {
        "hf:tm/cache/../../planted.gguf", "hf:tm/cache/./m.gguf", "hf:tm/cache/m.gguf@../main",
        "hf:tm/cache/m.gguf@x/../main",   "hf:../cache/m.gguf",   "hf:tm/..cache/m.gguf",
        "hf:tm/cache/a//m.gguf"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        tool_result r = tool_run("info", names[i], NULL);
        cr_expect_eq(r.status, 1, "%s opened: %s", names[i], r.out);
        cr_expect(strstr(r.err, "cannot name a file in the Hugging Face cache"), "%s: %s", names[i],
                  r.err);
        tool_result_free(&r);
    }
    unsetenv("HF_HUB_OFFLINE");
}
