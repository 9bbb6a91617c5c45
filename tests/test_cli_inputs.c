/* Inputs that are not model files: shards that are FIFOs or links to devices and to other
 * people's files, streams that never end or are far too long, procfs files that report no size.
 * Each command runs under a time limit (SIGALRM set in the child survives exec), so a hang
 * fails the test instead of stopping the suite. */
#include "support/st_writer.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <fcntl.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(cli_inputs, .fini = test_cleanup);

enum { TIME_LIMIT_S = 10 };

typedef struct limited {
    int status; /* exit code, or 128 + signal (SIGALRM: over the time limit) */
    char err[4096]; /* stdout and stderr: check puts a refusal on stdout */
} limited;

/* Standard input from a pipe that another process fills with the file at path. */
static int pipe_from(const char *path)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t feeder = fork();
    if (feeder == 0) {
        close(fds[0]);
        int in = open(path, O_RDONLY);
        char buf[65536];
        for (ssize_t n; in >= 0 && (n = read(in, buf, sizeof buf)) > 0;)
            if (write(fds[1], buf, (size_t)n) != n)
                break;
        _exit(0);
    }
    close(fds[1]);
    return feeder < 0 ? -1 : fds[0];
}

/* Run the tool with stdin from stdin_path (through a pipe when piped; else /dev/null) and the
 * environment entry env (or none), at most TIME_LIMIT_S seconds. */
static limited run_limited(const char *stdin_path, bool piped, const char *env,
                           const char *const *args)
{
    const char *tool = getenv("TM_TOOL");
    cr_assert_not_null(tool, "TM_TOOL is not set (run the tests through make)");
    char err_path[300];
    snprintf(err_path, sizeof err_path, "%s/.stderr", test_dir());
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int in = piped ? pipe_from(stdin_path)
                       : open(stdin_path ? stdin_path : "/dev/null", O_RDONLY);
        int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in < 0 || err < 0 || dup2(in, 0) < 0 || dup2(err, 1) < 0 || dup2(err, 2) < 0)
            _exit(127);
        if (env)
            putenv((char *)(uintptr_t)env);
        alarm(TIME_LIMIT_S);
        char *argv[16] = {"tensormap"};
        for (int i = 0; i < 14 && args[i]; i++)
            argv[i + 1] = (char *)(uintptr_t)args[i];
        execv(tool, argv);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    limited r = {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), ""};
    size_t len;
    char *text = read_all(err_path, &len);
    snprintf(r.err, sizeof r.err, "%s", text);
    free(text);
    return r;
}

static void expect_refused(const limited *r, const char *needle)
{
    cr_expect_neq(r->status, 128 + SIGALRM, "still running after %d s: %s", TIME_LIMIT_S,
                  r->err);
    cr_expect_eq(r->status, 1, "exit %d: %s", r->status, r->err);
    cr_expect_not_null(strstr(r->err, needle), "stderr lacks \"%s\": %s", needle, r->err);
}

/* A checkpoint of two shards; the second shard's file is then replaced by make_second. */
static const char *write_checkpoint(void)
{
    static const float zeros[6];
    const uint64_t s23[2] = {2, 3};
    char one[300];
    snprintf(one, sizeof one, "%s", test_path("model-00001-of-00002.safetensors"));
    st_writer *w = st_writer_new();
    st_writer_add(w, "a", "F32", 2, s23, zeros, sizeof zeros);
    cr_assert_eq(st_writer_write(w, one), 0);
    st_writer_free(w);
    const char *index = test_path("model.safetensors.index.json");
    static const char json[] = "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\", "
                               "\"b\": \"model-00002-of-00002.safetensors\"}}";
    cr_assert_eq(st_write_file(index, json, strlen(json)), 0);
    return index;
}

static const char *second_shard(void) { return test_path("model-00002-of-00002.safetensors"); }

Test(cli_inputs, a_shard_that_is_a_fifo_is_refused_without_waiting)
{
    const char *index = write_checkpoint();
    cr_assert_eq(mkfifo(second_shard(), 0600), 0);
    const char *commands[][3] = {{"check", index, NULL}, {"info", index, NULL},
                                 {"tensors", index, NULL}};
    for (size_t i = 0; i < 3; i++) {
        limited r = run_limited(NULL, false, NULL, commands[i]);
        expect_refused(&r, "not a regular file");
    }
}

Test(cli_inputs, a_shard_linked_to_dev_zero_is_refused_without_reading_it)
{
    const char *index = write_checkpoint();
    cr_assert_eq(symlink("/dev/zero", second_shard()), 0);
    const char *args[] = {"check", index, NULL};
    limited r = run_limited(NULL, false, NULL, args);
    expect_refused(&r, "not a regular file");
}

/* The link's target is someone else's file: its bytes must not appear in the error, not even
 * as the number its first 8 bytes make. A file of the test's own stands in for /etc/passwd. */
Test(cli_inputs, a_shard_linked_to_another_file_does_not_leak_its_bytes)
{
    const char *index = write_checkpoint();
    const char *secret = test_path("secret.txt");
    static const char text[] = "root:x:0:0:root:/root:/bin/bash\n";
    cr_assert_eq(st_write_file(secret, text, strlen(text)), 0);
    cr_assert_eq(symlink("secret.txt", second_shard()), 0);
    uint64_t as_length = 0;
    for (int i = 7; i >= 0; i--)
        as_length = as_length << 8 | (uint8_t)text[i];
    char number[32];
    snprintf(number, sizeof number, "%" PRIu64, as_length);
    const char *args[] = {"check", index, NULL};
    limited r = run_limited(NULL, false, NULL, args);
    expect_refused(&r, "not a safetensors file");
    cr_expect_null(strstr(r.err, number), "the first 8 bytes leaked as %s: %s", number, r.err);
    cr_expect_null(strstr(r.err, "root:x"), "the bytes leaked: %s", r.err);
}

/* A character device read as a stream: its first bytes are not a model, so it is refused at
 * once instead of read until memory runs out. */
Test(cli_inputs, dev_zero_as_the_input_is_refused_at_once)
{
    const char *link = test_path("zero.gguf");
    cr_assert_eq(symlink("/dev/zero", link), 0);
    const char *args[] = {"info", link, NULL};
    limited r = run_limited(NULL, false, NULL, args);
    expect_refused(&r, "a GGUF file opens");
    const char *piped[] = {"info", "-", NULL};
    r = run_limited("/dev/zero", false, NULL, piped);
    expect_refused(&r, "a GGUF file opens");
}

/* A model read from a stream longer than TM_STREAM_LIMIT is refused naming the limit; under the
 * limit it opens. */
Test(cli_inputs, a_stream_over_the_limit_is_refused_naming_it)
{
    const char *model = test_path("m.gguf");
    tm_writer *w;
    tm_error err;
    const uint64_t ne[1] = {1024};
    static float values[1024];
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    cr_assert_eq(tm_writer_tensor(w, "t", TM_TYPE_F32, 1, ne, values, &err), TM_OK);
    cr_assert_eq(tm_writer_finish(w, model, &err), TM_OK, "%s", err.message);
    const char *args[] = {"info", "-", NULL};
    limited r = run_limited(model, true, "TM_STREAM_LIMIT=1K", args);
    expect_refused(&r, "longer than the limit of 1024 bytes");
    cr_expect_not_null(strstr(r.err, "TM_STREAM_LIMIT"), "%s", r.err);
    r = run_limited(model, true, "TM_STREAM_LIMIT=1M", args);
    cr_expect_eq(r.status, 0, "exit %d: %s", r.status, r.err);
}

/* procfs reports a size of 0 for files that are not empty. */
Test(cli_inputs, a_procfs_file_is_not_called_empty)
{
    const char *args[] = {"info", "/proc/self/environ", NULL};
    limited r = run_limited(NULL, false, "TM_SOME_VARIABLE=1", args);
    cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_expect_null(strstr(r.err, "empty"), "%s", r.err);
    cr_expect_not_null(strstr(r.err, "a GGUF file opens"), "%s", r.err);
}
