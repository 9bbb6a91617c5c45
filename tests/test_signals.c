/* A signal that ends the tool while it writes leaves nothing behind: for each command that
 * writes a file (dump, export, merge, edit, split) and each of SIGINT, SIGTERM and SIGHUP, the
 * tool is stopped in the middle of writing its temporary file (an LD_PRELOAD shim,
 * tests/shim/fail_io.c, stops it just before its first write there), sent the signal and let
 * go: it must die of that signal (exit status unchanged) with the temporary file gone and what
 * the output path held before intact. Under a file-size limit (RLIMIT_FSIZE, SIGXFSZ at its
 * default action) the write fails, the error path removes the temporary file, and the tool
 * still dies of SIGXFSZ. */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(signals, .fini = test_cleanup, .timeout = 120);

/* Inputs and outputs go in their own directory: the test's holds the runner's captures. */
static const char *work_dir(void)
{
    static char dir[256];
    snprintf(dir, sizeof dir, "%s/w", test_dir());
    mkdir(dir, 0777);
    return dir;
}

static const char *work_path(const char *name)
{
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", work_dir(), name);
    return p;
}

/* m.gguf: four f32 tensors of 4096 values (16 KiB each), t0 to t3. */
static void write_model(void)
{
    static float v[4096];
    for (int i = 0; i < 4096; i++)
        v[i] = (float)i * 0.5f;
    tm_writer *w;
    tm_error err = {0};
    const uint64_t ne[1] = {4096};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(w, "general.architecture", "llama", 5, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(w, "general.name", "model", 5, &err), TM_OK);
    static const char *const names[4] = {"t0", "t1", "t2", "t3"};
    for (int k = 0; k < 4; k++)
        cr_assert_eq(tm_writer_tensor(w, names[k], TM_TYPE_F32, 1, ne, v, &err), TM_OK);
    cr_assert_eq(tm_writer_finish(w, work_path("m.gguf"), &err), TM_OK, "%s", err.message);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

/* Every name in the work directory, hidden ones too, sorted, one per line. */
static char *listing(void)
{
    struct dirent **names;
    int n = scandir(work_dir(), &names, NULL, alphasort);
    cr_assert_geq(n, 0);
    char *out = calloc(1, 65536);
    for (int i = 0; i < n; i++) {
        if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, ".."))
            snprintf(out + strlen(out), 65536 - strlen(out), "%s\n", names[i]->d_name);
        free(names[i]);
    }
    free(names);
    return out;
}

typedef struct command {
    const char *name;
    const char *argv[10]; /* run in the work directory */
    const char *kept;     /* an output that exists beforehand and must survive, or NULL */
} command;

static const command commands[] = {
    {"dump", {"tensormap", "dump", "m.gguf", "t0", "-o", "out.npy"}, "out.npy"},
    {"export", {"tensormap", "export", "m.gguf", "out.safetensors"}, "out.safetensors"},
    {"merge", {"tensormap", "merge", "s-00001-of-00002.gguf", "out.gguf"}, "out.gguf"},
    {"edit", {"tensormap", "edit", "m.gguf", "--set", "general.name=a name longer than before"},
     NULL},
    {"split", {"tensormap", "split", "--max-tensors", "2", "m.gguf", "p"}, NULL},
};

/* The inputs every command needs: the model, a split set of it (for merge), the outputs that
 * must survive. Returns the model's bytes. */
static char *prepare(size_t *len)
{
    write_model();
    const char *args[] = {"split", "--max-tensors", "2", work_path("m.gguf"), work_path("s"),
                          NULL};
    tool_result r = tool_run_in(NULL, args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (commands[i].kept)
            write_text(work_path(commands[i].kept), "precious");
    return read_all(work_path("m.gguf"), len);
}

/* Start the tool in the work directory, stopped before its first write to a file whose path
 * holds stop_path, or under RLIMIT_FSIZE at fsize. */
static int start(const command *c, const char *stop_path, rlim_t fsize)
{
    char err_path[512];
    snprintf(err_path, sizeof err_path, "%s/err", test_dir());
    const tool_spawn how = {work_dir(), err_path, stop_path, fsize, NULL};
    return tool_start(&how, c->argv);
}

static char *tool_stderr(void)
{
    char err_path[512];
    snprintf(err_path, sizeof err_path, "%s/err", test_dir());
    return read_all(err_path, NULL);
}

/* The work directory holds what it held before the command ran, the model byte for byte. */
static void expect_as_before(const command *c, const char *before, const char *model,
                             size_t model_len)
{
    char *now = listing();
    cr_expect_str_eq(now, before, "%s: the directory holds\n%s\nnot\n%s", c->name, now, before);
    free(now);
    size_t n;
    char *m = read_all(work_path("m.gguf"), &n);
    cr_expect(n == model_len && memcmp(m, model, n) == 0, "%s: the model changed", c->name);
    free(m);
    if (c->kept) {
        char *k = read_all(work_path(c->kept), NULL);
        cr_expect_str_eq(k, "precious", "%s: %s was replaced", c->name, c->kept);
        free(k);
    }
}

static void signal_each_command(int sig)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        const command *c = &commands[i];
        size_t len;
        char *model = prepare(&len);
        char *before = listing();
        int pid = start(c, ".tmp-", 0);
        char *mid = listing();
        cr_assert(strstr(mid, ".tmp-"), "%s: no temporary file while writing:\n%s", c->name, mid);
        free(mid);
        kill(pid, sig);
        kill(pid, SIGCONT);
        const int status = tool_wait(pid);
        cr_expect_eq(status, 128 + sig, "%s: exit %d, not death by signal %d", c->name, status,
                     sig);
        expect_as_before(c, before, model, len);
        free(before);
        free(model);
    }
}

Test(signals, sigint_leaves_no_temporary_file) { signal_each_command(SIGINT); }
Test(signals, sigterm_leaves_no_temporary_file) { signal_each_command(SIGTERM); }
Test(signals, sighup_leaves_no_temporary_file) { signal_each_command(SIGHUP); }

/* The model is 64 KiB and every output is larger than 16 KiB. */
Test(signals, a_file_size_limit_leaves_no_temporary_file_and_ends_by_sigxfsz)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        const command *c = &commands[i];
        size_t len;
        char *model = prepare(&len);
        char *before = listing();
        const int status = tool_wait(start(c, NULL, 16384));
        cr_expect_eq(status, 128 + SIGXFSZ, "%s: exit %d, not death by SIGXFSZ", c->name, status);
        char *err = tool_stderr();
        cr_expect(strstr(err, "File too large"), "%s: stderr: %s", c->name, err);
        free(err);
        expect_as_before(c, before, model, len);
        free(before);
        free(model);
    }
}

/* A signal the tool was started with ignored (nohup) stays ignored: the write goes on. */
Test(signals, an_ignored_sighup_stays_ignored)
{
    size_t len;
    char *model = prepare(&len);
    free(model);
    const command *c = &commands[0];
    signal(SIGHUP, SIG_IGN); /* inherited through fork and exec */
    int pid = start(c, ".tmp-", 0);
    signal(SIGHUP, SIG_DFL);
    kill(pid, SIGHUP);
    kill(pid, SIGCONT);
    const int status = tool_wait(pid);
    cr_expect_eq(status, 0, "exit %d", status);
    struct stat st;
    cr_assert_eq(stat(work_path("out.npy"), &st), 0);
    cr_expect_eq(st.st_size, 128 + 4096 * 4, "the dump was written whole");
}
