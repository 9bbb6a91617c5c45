/* FIFOs where the tool expects files: `edit --set-file KEY=FIFO` is refused at once (it used to
 * block forever in open, waiting for a writer), and a GGUF output that is a FIFO is refused
 * before anything is sent (the writer places tensors by offset: the reader used to get the
 * header, then the tool failed with "Illegal seek"). The FIFO itself is left as it was. */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(fifos, .fini = test_cleanup, .timeout = 60);

static const char *write_model(void)
{
    static const float v[64];
    const char *path = test_path("m.gguf");
    tm_writer *w;
    tm_error err = {0};
    const uint64_t ne[1] = {64};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(w, "general.name", "model", 5, &err), TM_OK);
    cr_assert_eq(tm_writer_tensor(w, "t", TM_TYPE_F32, 1, ne, v, &err), TM_OK);
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);
    return path;
}

/* The tool under a 10-second alarm (a hang ends as SIGALRM, not as a test that never returns). */
static int run_bounded(const char *const *args, char *err_out, size_t cap)
{
    char err_path[512];
    snprintf(err_path, sizeof err_path, "%s/err", test_dir());
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR), err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (null < 0 || err < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(err, 2) < 0)
            _exit(127);
        char *argv[16] = {"tensormap"};
        for (int i = 0; i < 14 && args[i]; i++)
            argv[i + 1] = strdup(args[i]);
        alarm(10);
        execv(getenv("TM_TOOL"), argv);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    char *e = read_all(err_path, NULL);
    snprintf(err_out, cap, "%s", e);
    free(e);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void expect_fifo(const char *path)
{
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0, "%s was removed", path);
    cr_expect(S_ISFIFO(st.st_mode), "%s is no longer a FIFO", path);
}

Test(fifos, set_file_from_a_fifo_is_refused_at_once)
{
    const char *model = write_model(), *fifo = test_path("template.fifo");
    cr_assert_eq(mkfifo(fifo, 0600), 0, "%s", strerror(errno));
    char arg[600], err[4096];
    snprintf(arg, sizeof arg, "tokenizer.chat_template=%s", fifo);
    const char *args[] = {"edit", model, "-o", test_path("out.gguf"), "--set-file", arg, NULL};
    int status = run_bounded(args, err, sizeof err);
    cr_expect_eq(status, 2, "exit %d (142 is the alarm: it blocked): %s", status, err);
    cr_expect(strstr(err, "not a regular file"), "%s", err);
    cr_expect_neq(access(test_path("out.gguf"), F_OK), 0, "a file was written");
    expect_fifo(fifo);
}

/* The FIFO's reader is opened first (non-blocking) so that the old behaviour could not block
 * in the open either; whatever reaches it is counted. */
static void expect_gguf_to_fifo_refused(const char *const *args, const char *fifo)
{
    int fd = open(fifo, O_RDONLY | O_NONBLOCK);
    cr_assert_geq(fd, 0);
    char err[4096];
    int status = run_bounded(args, err, sizeof err);
    char buf[65536];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    cr_expect_eq(status, 1, "%s: exit %d: %s", args[0], status, err);
    cr_expect(strstr(err, "cannot seek") && strstr(err, "written by offset"), "%s: %s", args[0],
              err);
    cr_expect_leq(n, 0, "%s: %zd bytes reached the FIFO's reader", args[0], n);
    expect_fifo(fifo);
}

Test(fifos, a_gguf_output_that_is_a_fifo_is_refused_before_anything_is_sent)
{
    const char *model = write_model(), *fifo = test_path("out.fifo");
    cr_assert_eq(mkfifo(fifo, 0600), 0, "%s", strerror(errno));
    const char *edit[] = {"edit", model, "-o", fifo, "--set", "general.name=other", NULL};
    expect_gguf_to_fifo_refused(edit, fifo);
    /* merge takes a split set's first shard (a file that is not one is refused first) */
    tool_result split = tool_run("split", "--max-tensors", "1", model, test_path("s"), NULL);
    cr_assert_eq(split.status, 0, "split: %s", split.err);
    tool_result_free(&split);
    const char *first = test_path("s-00001-of-00001.gguf");
    const char *merge[] = {"merge", first, fifo, NULL};
    expect_gguf_to_fifo_refused(merge, fifo);
    const char *json = test_path("h.json");
    FILE *f = fopen(json, "w");
    cr_assert_not_null(f);
    fputs("{\"data_size\": 0, \"kv\": [], \"tensors\": []}", f);
    fclose(f);
    const char *write[] = {"write", "--from-header", json, fifo, NULL};
    expect_gguf_to_fifo_refused(write, fifo);
}

/* The library refuses it too, before opening the FIFO (which would wait for a reader). */
Test(fifos, tm_writer_finish_refuses_a_fifo_without_opening_it)
{
    const char *fifo = test_path("out.fifo");
    cr_assert_eq(mkfifo(fifo, 0600), 0, "%s", strerror(errno));
    tm_writer *w;
    tm_error err = {0};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    alarm(10); /* a blocked open ends the test as a crash, not a hang */
    cr_expect_eq(tm_writer_finish(w, fifo, &err), TM_INVALID_ARG, "%s", err.message);
    alarm(0);
    cr_expect(strstr(err.message, "cannot seek"), "%s", err.message);
    expect_fifo(fifo);
}
