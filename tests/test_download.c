/* tensormap download against the local HTTP server (tests/support/http_server.py), which
 * answers the Hub's resolve URLs with X-Repo-Commit, X-Linked-Etag (the SHA-256, or a lie a
 * test plants) and X-Linked-Size, and logs every request with the bytes it sent: a resumed
 * download is held to the bytes the server actually sent. Hashes are sha256sum's; the cache's
 * layout is read back with readlink and cat. */
#include "support/http_serve.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static server srv;
static char root[256];

#define COMMIT "c0ffee0123456789abcdef0123456789abcdef01"

static void suite_init(void) { server_suite_start_hub(&srv, root); }

static void suite_fini(void) { server_suite_stop(&srv); }

TestSuite(download, .init = suite_init, .fini = suite_fini, .timeout = 120);

static const char *url(const char *path)
{
    static char u[8][512];
    static int next;
    char *p = u[next++ % 8];
    snprintf(p, sizeof u[0], "http://127.0.0.1:%d/%s", srv.port, path);
    return p;
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

static void expect_content(const char *path, const char *want)
{
    size_t n;
    char *got = read_all(path, &n);
    cr_expect(n == strlen(want) && memcmp(got, want, n) == 0, "%s changed", path);
    free(got);
}

/* An hf repository tm/dl at revision main on the server, holding FILE (a copy of the golden
 * file), its commit COMMIT. */
static void hub_file(const char *file, const char *golden)
{
    free(shell_ok("d=%s/hf/tm/dl/main && mkdir -p $(dirname $d/%s) && cp %s/golden/%s $d/%s && "
                  "printf %%s %s > %s/hf/tm/dl/main.commit",
                  root, file, getenv("TM_CORPUS"), golden, file, COMMIT, root));
}

static const char *cache_repo(void)
{
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/.cache/huggingface/hub/models--tm--dl", test_dir());
    return dir;
}

Test(download, an_hf_file_goes_into_the_cache_and_opens_from_there_offline)
{
    hub_file("m.gguf", "golden-a.gguf");
    hub_file("sub/n.gguf", "golden-b.gguf");
    char *sha_a = shell_ok("sha256sum %s/hf/tm/dl/main/m.gguf | cut -c1-64", root);
    char *sha_b = shell_ok("sha256sum %s/hf/tm/dl/main/sub/n.gguf | cut -c1-64", root);
    static const char *const names[] = {"hf:tm/dl/m.gguf", "hf:tm/dl/sub/n.gguf"};
    static const char *const files[] = {"m.gguf", "sub/n.gguf"};
    static const char *const links[] = {"../../blobs/", "../../../blobs/"};
    const char *const shas[] = {sha_a, sha_b};
    for (int i = 0; i < 2; i++) {
        tool_result r = tool_run("download", names[i], NULL);
        cr_assert_eq(r.status, 0, "%s", r.err);
        char want[1024];
        snprintf(want, sizeof want, "%s/snapshots/%s/%s\n", cache_repo(), COMMIT, files[i]);
        cr_expect_str_eq(r.out, want);
        cr_expect_str_empty(r.err, "no progress line off a terminal: %s", r.err);
        tool_result_free(&r);
        char *link = shell_ok("readlink %s/snapshots/%s/%s", cache_repo(), COMMIT, files[i]);
        snprintf(want, sizeof want, "%s%s", links[i], shas[i]);
        cr_expect_str_eq(link, want, "the snapshot is a relative link to blobs/SHA256");
        free(link);
        free(
            shell_ok("cmp %s/blobs/%s %s/hf/tm/dl/main/%s", cache_repo(), shas[i], root, files[i]));
    }
    char *ref = shell_ok("cat %s/refs/main", cache_repo());
    cr_expect_str_eq(ref, COMMIT);
    free(ref);
    char *unfinished = shell_ok("ls %s/blobs | grep -v '^[0-9a-f]*$' || true", cache_repo());
    cr_expect_str_empty(unfinished, "only finished blobs are left");
    free(unfinished);

    /* offline, no request: both open from the cache */
    setenv("HF_HUB_OFFLINE", "1", 1);
    for (int i = 0; i < 2; i++) {
        const size_t mark = server_log_mark(&srv);
        json_t *j = tool_json(0, "info", "--json", names[i], NULL);
        uint64_t bytes, requests;
        server_traffic_since(&srv, mark, &bytes, &requests);
        cr_expect_eq(requests, 0, "%s asked the server", names[i]);
        cr_expect_null(json_object_get(j, "fetched"));
        json_decref(j);
    }
    unsetenv("HF_HUB_OFFLINE");
    free(sha_a);
    free(sha_b);
}

/* The state file's pieces marked done. */
static int pieces_done(const char *state)
{
    if (!exists(state))
        return 0;
    char *text = read_all(state, NULL);
    const char *done = strstr(text, "\ndone ");
    int n = 0;
    for (const char *p = done ? done + 6 : ""; *p == '0' || *p == '1'; p++)
        n += *p == '1';
    free(text);
    return n;
}

/* Killed (SIGKILL) part-way, the same command fetches only the pieces not yet written; the
 * file that was at -o PATH is untouched until the new one is whole. */
Test(download, a_download_killed_part_way_resumes_with_only_the_rest)
{
    enum { SIZE = 1 << 20, PIECE = 64 << 10, N_PIECES = SIZE / PIECE };
    free(shell_ok("head -c %d /dev/urandom > %s/big.bin", SIZE, root));
    const char *dest = test_path("big.bin");
    free(shell_ok("printf precious > %s", dest));
    char part[600], state[700];
    snprintf(part, sizeof part, "%s.incomplete", dest);
    snprintf(state, sizeof state, "%s.tensormap", part);
    setenv("TM_DOWNLOAD_CHUNK", "65536", 1);
    /* /delay/ answers each request after 200 ms: 16 pieces take three seconds */
    const char *src = url("delay/big.bin");
    const char *argv[] = {"tensormap", "download", "-o", dest, src, NULL};
    tool_spawn how = {.err_path = test_path("stderr")};
    int pid = tool_start(&how, argv);
    for (int waited = 0; pieces_done(state) < 3 && waited < 20000; waited += 10)
        sleep_ms(10);
    cr_assert_geq(pieces_done(state), 3, "the download never got going");
    kill(pid, SIGKILL);
    cr_assert_eq(tool_wait(pid), 128 + SIGKILL);
    const int done = pieces_done(state);
    cr_assert_lt(done, N_PIECES, "the download ended before it was killed");
    expect_content(dest, "precious");
    cr_assert(exists(part));

    const size_t mark = server_log_mark(&srv);
    tool_result r = tool_run("download", "-o", dest, src, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    uint64_t bytes, requests;
    server_traffic_since(&srv, mark, &bytes, &requests);
    /* the rest, and the first request's 4 KiB that say the file is the same */
    const uint64_t rest = (uint64_t)(N_PIECES - done) * PIECE;
    cr_expect_leq(bytes, rest + 4096, "%" PRIu64 " bytes fetched for %" PRIu64 " missing", bytes,
                  rest);
    cr_expect_eq(requests, (uint64_t)(N_PIECES - done) + 1);
    free(shell_ok("cmp %s %s/big.bin", dest, root));
    cr_expect(!exists(part) && !exists(state), "the partial file and its state are removed");
    unsetenv("TM_DOWNLOAD_CHUNK");
}

/* A partial download of a file the server has since replaced starts again from nothing. */
Test(download, a_partial_download_of_a_file_since_replaced_starts_again)
{
    free(shell_ok("head -c 300000 /dev/urandom > %s/f.bin", root));
    const char *dest = test_path("f.bin");
    char part[600], state[700];
    snprintf(part, sizeof part, "%s.incomplete", dest);
    snprintf(state, sizeof state, "%s.tensormap", part);
    setenv("TM_DOWNLOAD_CHUNK", "65536", 1);
    const char *argv[] = {"tensormap", "download", "-o", dest, url("delay/f.bin"), NULL};
    tool_spawn how = {.err_path = test_path("stderr")};
    int pid = tool_start(&how, argv);
    for (int waited = 0; pieces_done(state) < 1 && waited < 20000; waited += 10)
        sleep_ms(10);
    kill(pid, SIGKILL);
    tool_wait(pid);
    cr_assert_geq(pieces_done(state), 1);
    free(shell_ok("head -c 300000 /dev/urandom > %s/f.new && mv %s/f.new %s/f.bin", root, root,
                  root));
    tool_result r = tool_run("download", "-o", dest, url("files/f.bin"), NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    free(shell_ok("cmp %s %s/f.bin", dest, root));
    unsetenv("TM_DOWNLOAD_CHUNK");
}

/* A SHA-256 that is not the one the Hub gives is refused, the download removed, and the file
 * at -o PATH (or the cache) left as it was. */
Test(download, a_sha256_mismatch_is_refused_and_removed)
{
    hub_file("m.gguf", "golden-a.gguf");
    free(shell_ok("printf %%064d 0 > %s/hf/tm/dl/main/m.gguf.sha256", root));
    const char *dest = test_path("m.gguf");
    free(shell_ok("printf precious > %s", dest));
    tool_result r = tool_run("download", "-o", dest, "hf:tm/dl/m.gguf", NULL);
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "SHA-256") && strstr(r.err, "0000000000000000"), "%s", r.err);
    tool_result_free(&r);
    expect_content(dest, "precious");
    char *left = shell_ok("ls -a %s | grep -c incomplete || true", test_dir());
    cr_expect_str_eq(left, "0", "the partial download is removed");
    free(left);

    r = tool_run("download", "hf:tm/dl/m.gguf", NULL);
    cr_expect_eq(r.status, 1);
    tool_result_free(&r);
    left = shell_ok("ls %s/blobs; ls %s/snapshots 2>/dev/null || true", cache_repo(), cache_repo());
    cr_expect_str_empty(left, "the cache holds nothing of it");
    free(left);
}

/* A plain server's file that changes between ranges (its size, or its ETag at the same size)
 * is refused, and nothing takes the name. */
Test(download, a_file_changing_on_the_server_is_refused)
{
    setenv("TM_DOWNLOAD_CHUNK", "65536", 1);
    static const int swapped_size[] = {200000, 150000};
    for (int i = 0; i < 2; i++) {
        char name[32];
        snprintf(name, sizeof name, "s%d.bin", i);
        free(shell_ok(
            "head -c 200000 /dev/urandom > %s/%s && head -c %d /dev/urandom > %s/%s.swapped", root,
            name, swapped_size[i], root, name));
        const char *dest = test_path(name);
        char path[64];
        snprintf(path, sizeof path, "swap/%s", name);
        tool_result r = tool_run("download", "-o", dest, url(path), NULL);
        cr_expect_eq(r.status, 1, "%s", name);
        cr_expect(strstr(r.err, "changed on the server"), "%s", r.err);
        cr_expect(!exists(dest), "%s took its name", dest);
        tool_result_free(&r);
    }
    unsetenv("TM_DOWNLOAD_CHUNK");
}

/* A server that ignores Range: refused before anything is written, and the destination kept;
 * a file small enough to come whole in the first answer is still downloaded. */
Test(download, a_server_that_ignores_range_is_refused_and_nothing_is_written)
{
    setenv("TM_HTTP_CHUNK", "65536", 1);
    free(shell_ok("head -c 200000 /dev/urandom > %s/big.bin && head -c 1000 /dev/urandom > "
                  "%s/small.bin", root, root));
    const char *dest = test_path("big.bin");
    free(shell_ok("printf mine > %s", dest));
    tool_result r = tool_run("download", "-o", dest, url("norange/big.bin"), NULL);
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strstr(r.err, "ignores Range") && strstr(r.err, "nothing was written"), "%s", r.err);
    tool_result_free(&r);
    expect_content(dest, "mine");
    char part[600];
    snprintf(part, sizeof part, "%s.incomplete", dest);
    cr_expect(!exists(part), "%s was left behind", part);
    const char *small = test_path("small.bin");
    r = tool_run("download", "-o", small, url("norange/small.bin"), NULL);
    cr_expect_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    free(shell_ok("cmp %s %s/small.bin", small, root));
    unsetenv("TM_HTTP_CHUNK");
}

/* A PATH.incomplete that this tool did not make is not its to replace. */
Test(download, a_partial_file_not_made_here_is_left_alone)
{
    free(shell_ok("head -c 10000 /dev/urandom > %s/x.bin", root));
    const char *dest = test_path("x.bin");
    char part[600];
    snprintf(part, sizeof part, "%s.incomplete", dest);
    free(shell_ok("printf mine > %s", part));
    tool_result r = tool_run("download", "-o", dest, url("files/x.bin"), NULL);
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "not ours"), "%s", r.err);
    tool_result_free(&r);
    expect_content(part, "mine");
    cr_expect(!exists(dest));
    /* nor a state file that is not one */
    free(shell_ok("rm %s && printf other > %s.tensormap", part, part));
    r = tool_run("download", "-o", dest, url("files/x.bin"), NULL);
    cr_expect_eq(r.status, 1);
    tool_result_free(&r);
    char state[700];
    snprintf(state, sizeof state, "%s.tensormap", part);
    expect_content(state, "other");
}

/* A large piece goes out as four ranges at once. */
Test(download, a_large_file_is_fetched_in_ranges_at_once)
{
    free(shell_ok("head -c %d /dev/urandom > %s/large.bin", 16 << 20, root));
    const size_t mark = server_log_mark(&srv);
    tool_result r =
        tool_run_in(test_dir(), (const char *const[]){"download", url("delay/large.bin"), NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "large.bin\n", "a URL is written to its name here");
    tool_result_free(&r);
    free(shell_ok("cmp %s/large.bin %s/large.bin", test_dir(), root));
    json_t *log = server_log_since(&srv, mark);
    size_t n = json_array_size(log), overlapping = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *a = json_array_get(log, i);
        size_t with = 0;
        for (size_t k = 0; k < n; k++) {
            const json_t *b = json_array_get(log, k);
            with += k != i &&
                    json_real_value(json_object_get(a, "start")) <
                        json_real_value(json_object_get(b, "end")) &&
                    json_real_value(json_object_get(b, "start")) <
                        json_real_value(json_object_get(a, "end"));
        }
        overlapping = with > overlapping ? with : overlapping;
    }
    cr_expect_geq(overlapping, 3, "at most %zu other requests at once with one", overlapping);
    json_decref(log);
}

/* A progress line on a terminal (script(1) gives the tool one on all three streams), none off
 * one (the other tests' stderr is empty). */
Test(download, a_terminal_gets_a_progress_line)
{
    free(shell_ok("head -c 300000 /dev/urandom > %s/p.bin", root));
    char *out = shell_ok("cd %s && TM_PROGRESS_AFTER_MS=0 TM_DOWNLOAD_CHUNK=65536 script -qec "
                         "'%s download %s' /dev/null",
                         test_dir(), getenv("TM_TOOL"), url("delay/p.bin"));
    cr_expect(strstr(out, "downloading: ") && strstr(out, " of 300000 bytes ("), "%s", out);
    free(out);
    free(shell_ok("cmp %s/p.bin %s/p.bin", test_dir(), root));
}
