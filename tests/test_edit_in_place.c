/* An in-place edit whose header keeps its size writes only the bytes that change, where they
 * lie (an LD_PRELOAD shim, tests/shim/fail_io.c, logs every write: none reaches the tensor
 * data, and no new file is made), and is safe against a crash at any moment: the shim kills
 * the tool at each of its writes in turn (a write torn in half first), and the next command
 * that opens the file finds the journal the edit left and puts the old bytes back; the file is
 * then the original or the finished edit, byte for byte, and nothing is left beside it. */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(edit_in_place, .fini = test_cleanup, .timeout = 120);

/* Files go in their own directory (the test's holds the runner's captures). */
static const char *work_path(const char *name)
{
    static char paths[4][512];
    static int next;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/w", test_dir());
    mkdir(dir, 0777);
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", dir, name);
    return p;
}

/* m.gguf: general.name "model" and two f32 tensors of 2^20 values (8 MiB of data). */
static char *write_model(size_t *len, uint64_t *infos_end)
{
    static float v[1 << 20];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        v[i] = (float)i;
    const char *path = work_path("m.gguf");
    tm_writer *w;
    tm_error err = {0};
    const uint64_t ne[1] = {1 << 20};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(w, "general.name", "model", 5, &err), TM_OK);
    cr_assert_eq(tm_writer_tensor(w, "a", TM_TYPE_F32, 1, ne, v, &err), TM_OK);
    cr_assert_eq(tm_writer_tensor(w, "b", TM_TYPE_F32, 1, ne, v, &err), TM_OK);
    *infos_end = tm_writer_header_bytes(w);
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);
    return read_all(path, len);
}

static const char *const edit_argv[] = {"tensormap", "edit", NULL, "--set",
                                        "general.name=MODEL", NULL};

static int run_edit(const char *const *shim_env, const char *stop_at)
{
    const char *argv[6];
    memcpy(argv, edit_argv, sizeof argv);
    argv[2] = work_path("m.gguf");
    const tool_spawn how = {NULL, test_path("err"), stop_at, 0, shim_env};
    return tool_wait(tool_start(&how, argv));
}

/* The names beside the model, sorted, space-separated. */
static char *names_beside(void)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/w", test_dir());
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    cr_assert_geq(n, 0);
    char *out = calloc(1, 4096);
    for (int i = 0; i < n; i++) {
        if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, ".."))
            snprintf(out + strlen(out), 4096 - strlen(out), "%s ", names[i]->d_name);
        free(names[i]);
    }
    free(names);
    return out;
}

static bool file_is(const char *bytes, size_t len)
{
    size_t n;
    char *now = read_all(work_path("m.gguf"), &n);
    const bool same = n == len && memcmp(now, bytes, n) == 0;
    free(now);
    return same;
}

Test(edit_in_place, only_the_changed_bytes_of_the_header_are_written)
{
    size_t len;
    uint64_t infos_end;
    char *before = write_model(&len, &infos_end);
    struct stat st0, st1;
    cr_assert_eq(stat(work_path("m.gguf"), &st0), 0);
    char log_env[600];
    snprintf(log_env, sizeof log_env, "TM_IO_LOG=%s", test_path("io.log"));
    const char *env[] = {log_env, NULL};
    const int status = run_edit(env, NULL);
    char *err = read_all(test_path("err"), NULL);
    cr_assert_eq(status, 0, "exit %d: %s", status, err);
    free(err);
    cr_assert_eq(stat(work_path("m.gguf"), &st1), 0);
    cr_expect_eq(st1.st_ino, st0.st_ino, "the file was replaced, not rewritten in place");
    cr_expect_eq(st1.st_size, st0.st_size);
    /* every write to the model lies in its header: 5 bytes in all ("model" -> "MODEL") */
    char *log = read_all(test_path("io.log"), NULL), *save = NULL;
    char model_real[4096];
    cr_assert_not_null(realpath(work_path("m.gguf"), model_real));
    unsigned long long to_model = 0;
    for (char *line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char call[32], path[4096];
        long long at;
        size_t n;
        cr_assert_eq(sscanf(line, "%31s %4095s %lld %zu", call, path, &at, &n), 4, "%s", line);
        cr_expect(strcmp(call, "rename") && strcmp(call, "copy_file_range") &&
                      strcmp(call, "ftruncate") && strcmp(call, "writev"),
                  "not a rewrite in place: %s", line);
        if (strcmp(path, model_real) != 0)
            continue;
        if (strcmp(call, "fsync") == 0)
            continue;
        cr_expect(strcmp(call, "pwrite") == 0 || strcmp(call, "pwrite64") == 0, "%s", line);
        cr_expect(at >= 0 && (uint64_t)at + n <= infos_end, "past the header (%llu): %s",
                  (unsigned long long)infos_end, line);
        to_model += n;
    }
    free(log);
    cr_expect_eq(to_model, 5, "%llu bytes written to the model", to_model);
    size_t n;
    char *after = read_all(work_path("m.gguf"), &n);
    size_t differ = 0;
    for (size_t i = 0; i < n && n == len; i++)
        differ += before[i] != after[i];
    cr_expect_eq(differ, 5);
    free(after);
    free(before);
    char *names = names_beside();
    cr_expect_str_eq(names, "m.gguf ", "left beside the model: %s", names);
    free(names);
}

Test(edit_in_place, a_crash_at_any_write_is_undone_by_the_next_command)
{
    size_t len;
    uint64_t infos_end;
    char *original = write_model(&len, &infos_end);
    /* the finished edit, for comparison */
    cr_assert_eq(run_edit(NULL, NULL), 0);
    char *edited = read_all(work_path("m.gguf"), NULL);
    bool torn_seen = false, replayed = false;
    int crashes = 0;
    for (int step = 1; step < 40; step++) {
        free(write_model(&len, &infos_end));
        char crash_env[32];
        snprintf(crash_env, sizeof crash_env, "TM_CRASH_AT=%d", step);
        const char *env[] = {crash_env, NULL};
        const int status = run_edit(env, NULL);
        if (status == 0)
            break; /* past the last write: the edit ran whole */
        cr_assert_eq(status, 128 + SIGKILL, "step %d: exit %d", step, status);
        crashes++;
        torn_seen |= !file_is(original, len) && !file_is(edited, len);
        /* any command that opens the file replays what the edit left */
        tool_result r = tool_run("info", work_path("m.gguf"), NULL);
        cr_expect_eq(r.status, 0, "step %d: info after the crash: %s", step, r.err);
        replayed |= strstr(r.err, "are back as they were before it") != NULL;
        tool_result_free(&r);
        cr_expect(file_is(original, len) || file_is(edited, len),
                  "step %d: the file is neither the original nor the edit", step);
        char *names = names_beside();
        cr_expect_str_eq(names, "m.gguf ", "step %d: left beside the model: %s", step, names);
        free(names);
    }
    cr_expect_geq(crashes, 5, "only %d writes to crash at", crashes);
    cr_expect(torn_seen, "no crash left the header half-written (the test did not test much)");
    cr_expect(replayed, "no crash left a journal to replay");
    free(original);
    free(edited);
}

/* A signal that arrives while the header is being rewritten waits, then the rewrite is undone
 * before the signal ends the tool: the file is the original and the exit status the signal's. */
Test(edit_in_place, a_signal_during_the_rewrite_undoes_it)
{
    size_t len;
    uint64_t infos_end;
    char *original = write_model(&len, &infos_end);
    const char *argv[6];
    memcpy(argv, edit_argv, sizeof argv);
    argv[2] = work_path("m.gguf");
    const tool_spawn how = {NULL, test_path("err"), ".tm-journal", 0, NULL};
    const int pid = tool_start(&how, argv);
    kill(pid, SIGINT);
    kill(pid, SIGCONT);
    const int status = tool_wait(pid);
    cr_expect_eq(status, 128 + SIGINT, "exit %d", status);
    cr_expect(file_is(original, len), "the file is not the original");
    char *names = names_beside();
    cr_expect_str_eq(names, "m.gguf ", "left beside the model: %s", names);
    free(names);
    free(original);
}

/* A command that opens the file while an edit runs does not undo that edit: the journal is
 * replayed only when nobody holds the file's lock. */
Test(edit_in_place, a_running_edit_is_not_undone_by_a_reader)
{
    size_t len;
    uint64_t infos_end;
    char *original = write_model(&len, &infos_end);
    const char *argv[6];
    memcpy(argv, edit_argv, sizeof argv);
    argv[2] = work_path("m.gguf");
    /* stopped with its journal written, before the model is touched */
    const tool_spawn how = {NULL, test_path("err"), "/m.gguf", 0, NULL};
    const int pid = tool_start(&how, argv);
    char *names = names_beside();
    cr_expect_str_eq(names, ".m.gguf.tm-journal m.gguf ", "%s", names);
    free(names);
    tool_result r = tool_run("info", work_path("m.gguf"), NULL);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_null(strstr(r.err, "are back as they were"), "%s", r.err);
    tool_result_free(&r);
    kill(pid, SIGCONT);
    cr_expect_eq(tool_wait(pid), 0);
    cr_expect(!file_is(original, len), "the edit was undone");
    names = names_beside();
    cr_expect_str_eq(names, "m.gguf ", "%s", names);
    free(names);
    free(original);
}
