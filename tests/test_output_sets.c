/* Outputs of several files (export --max-shard-size: shards and an index; split: a set of
 * shards) go into place together, the entry (the index, the first shard) last: a re-export or
 * re-split over an existing output that is killed, signalled or fails part-way leaves the old
 * output byte for byte as it was, never half of each model. Old shards named as the new ones
 * but not part of the new output are removed when the old index names them (they are the
 * output being replaced), and refused up front otherwise (they are not ours). */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(output_sets, .fini = test_cleanup, .timeout = 120);

/* A model of four f32 tensors of 4096 values (16 KiB each), their values sign * i. */
static const char *write_model(const char *name, float sign)
{
    static float v[4096];
    for (int i = 0; i < 4096; i++)
        v[i] = sign * (float)i;
    const char *path = test_path(name);
    tm_writer *w;
    tm_error err = {0};
    const uint64_t ne[1] = {4096};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(w, "general.architecture", "llama", 5, &err), TM_OK);
    static const char *const names[4] = {"t0", "t1", "t2", "t3"};
    for (int k = 0; k < 4; k++)
        cr_assert_eq(tm_writer_tensor(w, names[k], TM_TYPE_F32, 1, ne, v, &err), TM_OK);
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);
    return path;
}

/* What a directory holds: every name (hidden ones only when asked) with its bytes' checksum,
 * sorted, one per line. Two snapshots are equal when the files are, byte for byte. */
static char *snapshot(const char *dir, bool hidden)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    cr_assert_geq(n, 0, "%s", dir);
    char *out = calloc(1, 1 << 16);
    for (int i = 0; i < n; i++) {
        const char *d = names[i]->d_name;
        if (strcmp(d, ".") && strcmp(d, "..") && (hidden || d[0] != '.')) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", dir, d);
            size_t len;
            char *bytes = read_all(path, &len);
            uint64_t h = 0xcbf29ce484222325u;
            for (size_t k = 0; k < len; k++)
                h = (h ^ (uint8_t)bytes[k]) * 0x100000001b3u;
            free(bytes);
            snprintf(out + strlen(out), (1 << 16) - strlen(out), "%s %zu %016llx\n", d, len,
                     (unsigned long long)h);
        }
        free(names[i]);
    }
    free(names);
    return out;
}

static void run_ok(const char *const *args)
{
    tool_result r = tool_run_in(NULL, args);
    cr_assert_eq(r.status, 0, "%s: %s", args[0], r.err);
    tool_result_free(&r);
}

static const char *set_dir(void)
{
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/set", test_dir());
    mkdir(dir, 0777);
    return dir;
}

static const char *set_path(bool split)
{
    static char out[600];
    snprintf(out, sizeof out, "%s/%s", set_dir(), split ? "p" : "ckpt");
    return out;
}

/* Over the first output (first_output), the same export or split of model B, stopped as it
 * begins the third of its four files; returns its pid. */
static int start_over(bool split)
{
    const char *b = write_model("b.gguf", -1), *out = set_path(split);
    const char *again_export[] = {"tensormap", "export", "--max-shard-size", "20000", b, out,
                                  NULL};
    const char *again_split[] = {"tensormap", "split", "--max-tensors", "1", b, out, NULL};
    const tool_spawn how = {NULL, test_path("err"),
                            split ? "p-00003-of-00004.gguf" : "model-00003-of-00004.safetensors",
                            0, NULL};
    return tool_start(&how, split ? again_split : again_export);
}

static const char *outdir(bool split)
{
    static char dir[600];
    if (split)
        snprintf(dir, sizeof dir, "%s", set_dir());
    else
        snprintf(dir, sizeof dir, "%s/ckpt", set_dir());
    return dir;
}

/* Killed (SIGKILL: nothing of the tool runs after) with two of four files complete: the old
 * set is there, whole and alone, byte for byte (hidden staged files may be left by a kill). */
static void killed_part_way(bool split)
{
    const int pid = start_over(split);
    kill(pid, SIGKILL);
    kill(pid, SIGCONT);
    cr_expect_eq(tool_wait(pid), 128 + SIGKILL);
}

static void expect_first_output(bool split, const char *first)
{
    char *now = snapshot(outdir(split), false);
    cr_expect_str_eq(now, first, "the set is not the first output:\n%s\nnot\n%s", now, first);
    free(now);
}

/* The first output alone, for comparison: made in the same place, then set aside. */
static char *first_output(bool split)
{
    const char *a = write_model("a.gguf", 1), *out = set_path(split);
    const char *e[] = {"export", "--max-shard-size", "20000", a, out, NULL};
    const char *s[] = {"split", "--max-tensors", "1", a, out, NULL};
    run_ok(split ? s : e);
    return snapshot(outdir(split), false);
}

Test(output_sets, a_killed_re_export_leaves_the_old_checkpoint_whole)
{
    char *first = first_output(false);
    killed_part_way(false);
    expect_first_output(false, first);
    /* and it still opens as the first model */
    char index[700];
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", outdir(false));
    tool_result r = tool_run("check", index, NULL);
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    tool_result_free(&r);
    free(first);
}

Test(output_sets, a_killed_re_split_leaves_the_old_set_whole)
{
    char *first = first_output(true);
    killed_part_way(true);
    expect_first_output(true, first);
    free(first);
}

/* A signal the tool can catch: the same, and no staged file is left either. */
static void signalled_part_way(bool split)
{
    char *first = first_output(split);
    char *all = snapshot(outdir(split), true);
    const int pid = start_over(split);
    kill(pid, SIGTERM);
    kill(pid, SIGCONT);
    cr_expect_eq(tool_wait(pid), 128 + SIGTERM);
    char *now = snapshot(outdir(split), true);
    cr_expect_str_eq(now, all, "left:\n%s\nnot\n%s", now, all);
    free(now);
    free(all);
    free(first);
}

Test(output_sets, a_signalled_re_export_leaves_nothing_of_itself) { signalled_part_way(false); }
Test(output_sets, a_signalled_re_split_leaves_nothing_of_itself) { signalled_part_way(true); }

/* A write failure (ENOSPC, tests/shim/fail_io.c) at every step of a re-export in turn: the old
 * checkpoint stays whole and nothing else is left, until the step count runs out and the new one
 * is in place, whole. */
Test(output_sets, a_failure_at_every_step_of_a_re_export_leaves_the_old_checkpoint)
{
    char *first = first_output(false);
    char *all = snapshot(outdir(false), true);
    char b[600], err_path[600]; /* test_path's slots are reused: copies */
    snprintf(b, sizeof b, "%s", write_model("b.gguf", -1));
    snprintf(err_path, sizeof err_path, "%s", test_path("err"));
    const char *argv[] = {"tensormap", "export", "--max-shard-size", "20000", b,
                          outdir(false), NULL};
    int step = 1, status;
    for (;; step++) {
        char at[32];
        snprintf(at, sizeof at, "TM_FAIL_AT=%d", step);
        const char *env[] = {at, NULL};
        const tool_spawn how = {NULL, err_path, NULL, 0, env};
        if ((status = tool_wait(tool_start(&how, argv))) == 0 || step == 300)
            break;
        cr_assert_eq(status, 1, "step %d: exit %d", step, status);
        char *now = snapshot(outdir(false), true);
        cr_assert_str_eq(now, all, "step %d: left\n%s\nnot\n%s", step, now, all);
        free(now);
    }
    cr_expect_eq(status, 0, "the export never succeeded");
    cr_expect_geq(step, 10, "only %d steps failed", step - 1);
    char *now = snapshot(outdir(false), true);
    cr_expect_str_neq(now, first, "the new checkpoint is not in place");
    cr_expect_null(strstr(now, "\n."), "hidden files left:\n%s", now);
    free(now);
    free(all);
    free(first);
}

/* A re-export into fewer files removes the old checkpoint's other shards (its index named
 * them: they are the output replaced), and nothing else. */
Test(output_sets, a_re_export_into_fewer_files_removes_the_old_ones)
{
    const char *a = write_model("a.gguf", 1);
    char out[600];
    snprintf(out, sizeof out, "%s", outdir(false));
    const char *four[] = {"export", "--max-shard-size", "20000", a, out, NULL};
    run_ok(four);
    char mine[700];
    snprintf(mine, sizeof mine, "%s/notes.txt", out);
    FILE *f = fopen(mine, "w");
    fputs("mine", f);
    fclose(f);
    const char *two[] = {"export", "--max-shard-size", "40000", a, out, NULL};
    run_ok(two);
    char *now = snapshot(out, true);
    cr_expect(strstr(now, "model-00001-of-00002.safetensors") &&
                  strstr(now, "model-00002-of-00002.safetensors") &&
                  strstr(now, "model.safetensors.index.json") && strstr(now, "notes.txt") &&
                  !strstr(now, "-of-00004"),
              "%s", now);
    free(now);
}

/* Files named as the new set's but not named by the output being replaced are not ours: the
 * set is refused before anything is written, and everything stays. */
Test(output_sets, a_foreign_file_named_like_the_set_is_refused_up_front)
{
    const char *a = write_model("a.gguf", 1);
    char out[600], foreign[700];
    snprintf(out, sizeof out, "%s", outdir(false));
    const char *four[] = {"export", "--max-shard-size", "20000", a, out, NULL};
    run_ok(four);
    snprintf(foreign, sizeof foreign, "%s/model-00001-of-00009.safetensors", out);
    FILE *f = fopen(foreign, "w");
    fputs("not ours", f);
    fclose(f);
    char *before = snapshot(out, true);
    tool_result r = tool_run("export", "--max-shard-size", "40000", a, out, NULL);
    cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "model-00001-of-00009.safetensors, named as the new files are"),
              "%s", r.err);
    tool_result_free(&r);
    char *after = snapshot(out, true);
    cr_expect_str_eq(after, before);
    free(before);
    free(after);
    /* a split set of another count beside the prefix: the same */
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s/p", set_dir());
    const char *one[] = {"split", "--max-tensors", "1", a, prefix, NULL};
    run_ok(one);
    before = snapshot(set_dir(), true);
    r = tool_run("split", "--max-tensors", "2", a, prefix, NULL);
    cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "p-00001-of-00004.gguf"), "%s", r.err);
    tool_result_free(&r);
    after = snapshot(set_dir(), true);
    cr_expect_str_eq(after, before);
    free(before);
    free(after);
}
