/* Two in-place edits of one file at once: one fails, saying so, instead of both exiting 0 with
 * one of them lost; an edit whose file another program replaced meanwhile is not written over
 * the replacement. Made deterministic by holding the lock from the test, or by stopping the
 * first edit in the middle of writing (the LD_PRELOAD shim, tests/shim/fail_io.c). */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

TestSuite(edit_concurrent, .fini = test_cleanup, .timeout = 60);

/* A model named name, with one f32 tensor. */
static void write_model(const char *path, const char *name)
{
    static const float v[256] = {1, 2, 3};
    tm_writer *w;
    tm_error err = {0};
    const uint64_t ne[1] = {256};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(w, "general.name", name, strlen(name), &err), TM_OK);
    cr_assert_eq(tm_writer_tensor(w, "t", TM_TYPE_F32, 1, ne, v, &err), TM_OK);
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);
}

static void expect_name(const char *path, const char *name)
{
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(path, 0, &f, &err), TM_OK, "%s", err.message);
    tm_str s;
    cr_assert_eq(tm_kv_get_str(tm_kv_find(f, "general.name"), &s), TM_OK);
    cr_expect(s.len == strlen(name) && memcmp(s.ptr, name, s.len) == 0, "general.name is '%.*s'",
              (int)s.len, s.ptr);
    tm_close(f);
}

static char *err_text(void) { return read_all(test_path("err"), NULL); }

Test(edit_concurrent, a_file_locked_by_another_edit_is_refused_at_once)
{
    const char *path = test_path("m.gguf");
    write_model(path, "model");
    size_t len;
    char *before = read_all(path, &len);
    int fd = open(path, O_RDONLY);
    cr_assert_eq(flock(fd, LOCK_EX), 0); /* what a running edit holds */
    tool_result r = tool_run("edit", path, "--set", "general.name=other", NULL);
    cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "another process is editing it"), "%s", r.err);
    tool_result_free(&r);
    size_t n;
    char *after = read_all(path, &n);
    cr_expect(n == len && memcmp(before, after, n) == 0, "the locked file changed");
    free(after);
    close(fd); /* the lock goes: the edit goes through */
    r = tool_run("edit", path, "--set", "general.name=other", NULL);
    cr_expect_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    expect_name(path, "other");
    free(before);
}

/* The first edit is stopped while it writes its new file; the second, started then, fails;
 * the first then finishes, and its change is the one in the file. */
Test(edit_concurrent, of_two_edits_at_once_the_second_fails_and_nothing_is_lost)
{
    const char *path = test_path("m.gguf");
    write_model(path, "model");
    const char *first[] = {"tensormap", "edit", path, "--set",
                           "general.name=the first edit's longer name", NULL};
    const tool_spawn stopped = {NULL, test_path("err"), ".tmp-", 0, NULL};
    const int pid = tool_start(&stopped, first);
    tool_result r = tool_run("edit", path, "--set", "general.name=second", NULL);
    cr_expect_eq(r.status, 1, "the second edit: exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "another process is editing it"), "%s", r.err);
    tool_result_free(&r);
    kill(pid, SIGCONT);
    const int status = tool_wait(pid);
    char *e = err_text();
    cr_expect_eq(status, 0, "the first edit: exit %d: %s", status, e);
    free(e);
    expect_name(path, "the first edit's longer name");
}

/* Another program (which takes no lock) puts a new file at the path while the edit writes: the
 * edit fails, saying so, and the new file stays. */
Test(edit_concurrent, a_file_replaced_during_the_edit_is_not_written_over)
{
    const char *path = test_path("m.gguf"), *other = test_path("other.gguf");
    write_model(path, "model");
    write_model(other, "put there by another program");
    const char *edit[] = {"tensormap", "edit", path, "--set", "general.name=a longer new name",
                          NULL};
    const tool_spawn stopped = {NULL, test_path("err"), ".tmp-", 0, NULL};
    const int pid = tool_start(&stopped, edit);
    cr_assert_eq(rename(other, path), 0);
    kill(pid, SIGCONT);
    const int status = tool_wait(pid);
    char *e = err_text();
    cr_expect_eq(status, 1, "exit %d: %s", status, e);
    cr_expect(strstr(e, "another program replaced the file while it was being edited"), "%s", e);
    free(e);
    expect_name(path, "put there by another program");
}
