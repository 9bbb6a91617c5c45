/* dump -o - refuses a terminal for standard output, as lz4 and zstd do: the values are bytes,
 * and bytes on a terminal are noise that can drive it. The tool runs with its standard output
 * on the slave side of a pseudo-terminal opened here (posix_openpt); whatever it writes there
 * is read back from the master side. */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(dump_tty, .fini = test_cleanup);

static void ok(tm_status s, const tm_error *err)
{
    cr_assert_eq(s, TM_OK, "%s", err->message);
}

static const char *write_model(void)
{
    static char path[300];
    snprintf(path, sizeof path, "%s", test_path("model.gguf"));
    const float v[4] = {1.0f, 10.0f, 27.0f, 0.5f}; /* 10.0f holds a byte 0x0a, a newline */
    const uint64_t ne[1] = {4};
    tm_writer *w;
    tm_error err;
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_tensor(w, "t", TM_TYPE_F32, 1, ne, v, &err), &err);
    ok(tm_writer_finish(w, path, &err), &err);
    return path;
}

typedef struct tty_result {
    int status;
    size_t on_terminal; /* bytes that reached the terminal */
    char *err;
} tty_result;

/* The tool with args, its standard output a terminal, stderr to a file, stdin /dev/null. */
static tty_result run_on_a_terminal(const char *const *args)
{
    const char *tool = getenv("TM_TOOL");
    cr_assert_not_null(tool, "TM_TOOL is not set (run the tests through make)");
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    cr_assert_geq(master, 0, "posix_openpt: %s", strerror(errno));
    cr_assert(grantpt(master) == 0 && unlockpt(master) == 0, "%s", strerror(errno));
    const char *slave = ptsname(master);
    cr_assert_not_null(slave);
    char err_path[300];
    snprintf(err_path, sizeof err_path, "%s", test_path("stderr"));
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int out = open(slave, O_RDWR | O_NOCTTY), in = open("/dev/null", O_RDONLY),
            err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (out < 0 || in < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
            dup2(err, 2) < 0)
            _exit(127);
        char *argv[16] = {"tensormap"};
        for (int i = 0; i < 14 && args[i]; i++)
            argv[i + 1] = strdup(args[i]);
        execv(tool, argv);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    tty_result r = {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), 0, NULL};
    /* what the tool wrote is waiting on the master side; EIO or EAGAIN once there is none */
    fcntl(master, F_SETFL, O_NONBLOCK);
    char buf[4096];
    for (ssize_t got; (got = read(master, buf, sizeof buf)) > 0;)
        r.on_terminal += (size_t)got;
    close(master);
    r.err = read_all(err_path, NULL);
    return r;
}

Test(dump_tty, dump_to_standard_output_refuses_a_terminal)
{
    const char *model = write_model();
    static const char *const formats[] = {"raw", "npy", "lz4"};
    for (size_t i = 0; i < 3; i++) {
        const char *args[] = {"dump", model, "t", "--format", formats[i], "-o", "-", NULL};
        tty_result r = run_on_a_terminal(args);
        cr_expect_eq(r.status, 2, "%s: exit %d, stderr: %s", formats[i], r.status, r.err);
        cr_expect_eq(r.on_terminal, 0, "%s: %zu bytes of values reached the terminal",
                     formats[i], r.on_terminal);
        cr_expect(strstr(r.err, "standard output is a terminal"), "%s: %s", formats[i], r.err);
        free(r.err);
    }
    /* with standard output still a terminal, a file is written as ever */
    const char *out = test_path("t.f32");
    const char *args[] = {"dump", model, "t", "-o", out, NULL};
    tty_result r = run_on_a_terminal(args);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(r.on_terminal, 0);
    free(r.err);
    size_t n;
    free(read_all(out, &n));
    cr_expect_eq(n, 16);
    /* and a pipe or a file for standard output still takes the values (tool_run's is a file) */
    tool_result p = tool_run("dump", model, "t", "-o", "-", NULL);
    cr_expect_eq(p.status, 0, "%s", p.err);
    cr_expect_eq(p.out_len, 16);
    tool_result_free(&p);
}
