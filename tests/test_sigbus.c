/* Files that change under the mapping: another process truncates a file between tm_open and
 * a decode. The mapped path raises SIGBUS, which the tool must turn into "FILE changed size
 * while being read" and exit code 1; the --no-mmap / TM_OPEN_NO_MMAP path reads the file into
 * memory and must not notice at all; a pipe must work as a file. */
#include <criterion/criterion.h>

#include "tensormap.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

/* 16 Mi bytes of f32 in a hole: several of the tool's decode chunks (about 4 MiB each), and
 * nothing written to disk. */
#define BIG_NE0 1024u
#define BIG_NE1 4096u
#define BIG_BYTES ((uint64_t)BIG_NE0 * BIG_NE1 * 4)

static char dir[64], model[128], other[128], fifo[128], errpath[128];

static void make_dir(void)
{
    strcpy(dir, "/tmp/tm_sigbus_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(model, sizeof model, "%s/big.gguf", dir);
    snprintf(other, sizeof other, "%s/other.gguf", dir);
    snprintf(fifo, sizeof fifo, "%s/out.fifo", dir);
    snprintf(errpath, sizeof errpath, "%s/stderr", dir);
}

static void remove_dir(void)
{
    unlink(model);
    unlink(other);
    unlink(fifo);
    unlink(errpath);
    char out[160];
    snprintf(out, sizeof out, "%s/out.npy", dir);
    unlink(out);
    rmdir(dir);
}

/* A GGUF file with one f32 tensor "big" that is a sparse hole (it reads as zeros). */
static void write_big_model(void)
{
    tm_writer *w;
    tm_error err;
    const uint64_t ne[2] = {BIG_NE0, BIG_NE1};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_tensor(w, "big", TM_TYPE_F32, 2, ne, NULL, &err), TM_OK, "%s",
                 err.message);
    cr_assert_eq(tm_writer_finish(w, model, &err), TM_OK, "%s", err.message);
}

static const char *tool(void)
{
    const char *t = getenv("TM_TOOL");
    cr_assert_not_null(t, "TM_TOOL is not set (run the tests through make)");
    return t;
}

static char *slurp(const char *path)
{
    static char buf[8192];
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp);
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    return buf;
}

/* Run the tool with argv, its standard output into the FIFO and its standard error into a
 * file; wait for its first output byte (it has opened and mapped the model and decoded
 * something), truncate the model behind its back, then drain the FIFO.
 *
 * How far the tool can run ahead is bounded by construction, not by timing: the FIFO holds one
 * page (F_SETPIPE_SZ) and the tool blocks writing once that and its stdio buffer are full, far
 * before the end of its output. The read end is opened non-blocking so that a tool that exits
 * without writing is noticed instead of blocking the test; poll's timeout only paces that
 * check. Returns the bytes received; *status gets the tool's exit status. */
static uint64_t run_and_truncate(char *const argv[], int *status)
{
    static char buf[1 << 16];
    uint64_t got = 0;
    ssize_t n = 0;
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    int fd = open(fifo, O_RDONLY | O_NONBLOCK);
    cr_assert_geq(fd, 0);
    cr_assert_geq(fcntl(fd, F_SETPIPE_SZ, 4096), 4096);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int out = open(fifo, O_WRONLY), err = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (out < 0 || err < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0)
            _exit(127);
        execv(tool(), argv);
        _exit(127);
    }
    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        if (poll(&pfd, 1, 100) > 0 && (n = read(fd, buf, 1)) > 0)
            break;
        cr_assert_eq(waitpid(pid, status, WNOHANG), 0,
                     "the tool ended before writing anything: %s", slurp(errpath));
    }
    got += (uint64_t)n;
    cr_assert_eq(fcntl(fd, F_SETFL, 0), 0);
    cr_assert_eq(truncate(model, 4096), 0, "truncate failed");
    while ((n = read(fd, buf, sizeof buf)) > 0)
        got += (uint64_t)n;
    close(fd);
    cr_assert_eq(waitpid(pid, status, 0), pid);
    return got;
}

static void expect_changed_size_message(int status)
{
    const char *err = slurp(errpath);
    char want[256];
    cr_expect(WIFEXITED(status), "the tool died of signal %d instead of exiting",
              WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    cr_expect_eq(WEXITSTATUS(status), 1, "exit status %d", WEXITSTATUS(status));
    snprintf(want, sizeof want, "%s changed size while being read", model);
    cr_expect_not_null(strstr(err, want), "stderr was: %s", err);
}

TestSuite(changing, .init = make_dir, .fini = remove_dir, .timeout = 60);

Test(changing, dump_of_a_file_truncated_while_mapped_names_it_and_exits_1)
{
    int status;
    char *argv[] = {"tensormap", "dump", model, "big", "-o", "-", "--format", "raw", NULL};
    write_big_model();
    uint64_t got = run_and_truncate(argv, &status);
    expect_changed_size_message(status);
    cr_expect_lt(got, BIG_BYTES, "all %llu bytes arrived although the file was cut",
                 (unsigned long long)got);
}

/* 2000 tensors of 4 KiB in a hole: a command that prints a line per tensor is still on the
 * first few dozen when the file is cut to one page. */
static void write_many_tensors(const char *path)
{
    tm_writer *w;
    tm_error err;
    char name[16];
    const uint64_t ne[1] = {1024};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK, "%s", err.message);
    for (unsigned i = 0; i < 2000; i++) {
        snprintf(name, sizeof name, "t%04u", i);
        cr_assert_eq(tm_writer_tensor(w, name, TM_TYPE_F32, 1, ne, NULL, &err), TM_OK, "%s",
                     err.message);
    }
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);
}

Test(changing, stats_of_a_file_truncated_while_mapped_names_it_and_exits_1)
{
    int status;
    char *argv[] = {"tensormap", "stats", model, NULL};
    write_many_tensors(model);
    run_and_truncate(argv, &status);
    expect_changed_size_message(status);
}

/* compare holds two mappings; the first file opened is cut, so naming the last file opened
 * would be wrong: the message must name the file whose pages faulted. */
Test(changing, compare_names_the_file_that_was_cut)
{
    int status;
    char *argv[] = {"tensormap", "compare", model, other, NULL};
    write_many_tensors(model);
    write_many_tensors(other);
    run_and_truncate(argv, &status);
    expect_changed_size_message(status);
    char not_want[256];
    snprintf(not_want, sizeof not_want, "%s changed size", other);
    cr_expect_null(strstr(slurp(errpath), not_want), "the intact file was named");
}

Test(changing, dump_with_no_mmap_does_not_notice_the_truncation)
{
    int status;
    char *argv[] = {"tensormap", "--no-mmap", "dump", model, "big", "-o", "-", "--format", "raw",
                    NULL};
    write_big_model();
    uint64_t got = run_and_truncate(argv, &status);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d, stderr: %s", status,
              slurp(errpath));
    cr_expect_eq(got, BIG_BYTES, "%llu of %llu bytes", (unsigned long long)got,
                 (unsigned long long)BIG_BYTES);
}

/* The library's side: TM_OPEN_NO_MMAP holds the bytes, so a decode after the file was cut
 * gives what the file held when it was opened. */
Test(changing, no_mmap_open_decodes_after_the_file_is_cut)
{
    tm_writer *w;
    tm_file *f;
    tm_error err;
    float in[64], out[64];
    const uint64_t ne[1] = {64};
    for (unsigned i = 0; i < 64; i++)
        in[i] = (float)i * 0.25f - 3.0f;
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_tensor(w, "t", TM_TYPE_F32, 1, ne, in, &err), TM_OK, "%s",
                 err.message);
    cr_assert_eq(tm_writer_finish(w, model, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_open(model, TM_OPEN_NO_MMAP, &f, &err), TM_OK, "%s", err.message);
    cr_assert_eq(truncate(model, 0), 0);
    const tm_tensor *t = tm_tensor_find(f, "t");
    cr_assert_not_null(t);
    cr_assert_eq(tm_dequant_tensor(t, out, 1, &err), TM_OK, "%s", err.message);
    cr_expect_arr_eq(out, in, sizeof in);
    tm_close(f);
}

/* Run `sh -c CMD`, return its stdout (malloc'ed) and exit status. */
static char *run_shell(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t cap = 1 << 16, len = 0, n;
    char *out = malloc(cap);
    cr_assert_not_null(out);
    while ((n = fread(out + len, 1, cap - 1 - len, p)) > 0) {
        len += n;
        if (len == cap - 1) {
            cap *= 2;
            out = realloc(out, cap);
            cr_assert_not_null(out);
        }
    }
    out[len] = '\0';
    *status = pclose(p);
    return out;
}

/* `cat model.gguf | tensormap tensors -`: a pipe cannot be mapped; it is read whole and gives
 * the same listing as the file. */
Test(changing, a_pipe_reads_like_the_file)
{
    char cmd[1024];
    int st_file, st_pipe;
    const char *corpus = getenv("TM_CORPUS");
    cr_assert_not_null(corpus);
    snprintf(cmd, sizeof cmd, "'%s' tensors '%s/golden/golden-a.gguf'", tool(), corpus);
    char *from_file = run_shell(cmd, &st_file);
    snprintf(cmd, sizeof cmd, "cat '%s/golden/golden-a.gguf' | '%s' tensors -", corpus, tool());
    char *from_pipe = run_shell(cmd, &st_pipe);
    cr_expect_eq(st_file, 0);
    cr_expect_eq(st_pipe, 0);
    cr_expect_gt(strlen(from_file), 58 * 10, "the listing is too short: %s", from_file);
    cr_expect_str_eq(from_pipe, from_file);
    snprintf(cmd, sizeof cmd, "cat '%s/golden/golden-a.gguf' | '%s' info - >/dev/null", corpus,
             tool());
    free(run_shell(cmd, &st_pipe));
    cr_expect_eq(st_pipe, 0, "tensormap info - exits %d", st_pipe);
    free(from_file);
    free(from_pipe);
}

/* A dump to a file, cut short by SIGBUS, leaves no file: not the .npy (whose header would
 * claim the full shape) and not the temporary file it was being written as.
 *
 * Made deterministic with a stopped terminal: the tool's stderr is a pseudo-terminal whose
 * output is suspended (tcflow TCOOFF), so the tool shows progress (a 64 MiB dump to a
 * terminal) and blocks in its first progress write, after the first chunk went to the output
 * and before the next is decoded. The model is cut then, and the terminal resumed. */
Test(changing, a_dump_to_a_file_cut_by_sigbus_leaves_no_file)
{
    const uint64_t ne[2] = {4096, 4096}; /* 64 MiB of f32 in a hole */
    tm_writer *w;
    tm_error err;
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_tensor(w, "big", TM_TYPE_F32, 2, ne, NULL, &err), TM_OK, "%s",
                 err.message);
    cr_assert_eq(tm_writer_finish(w, model, &err), TM_OK, "%s", err.message);
    char out[160];
    snprintf(out, sizeof out, "%s/out.npy", dir);
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    cr_assert_geq(master, 0);
    cr_assert(grantpt(master) == 0 && unlockpt(master) == 0);
    int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
    cr_assert_geq(slave, 0);
    cr_assert_eq(tcflow(slave, TCOOFF), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        /* the progress line at once, not after a second: the write that blocks */
        if (dup2(slave, STDERR_FILENO) < 0 || setenv("TM_PROGRESS_AFTER_MS", "0", 1) != 0)
            _exit(127);
        execl(tool(), "tensormap", "dump", model, "big", "-o", out, (char *)NULL);
        _exit(127);
    }
    /* Blocked on the terminal, the tool sits in a write(2) to it. */
    for (int i = 0;; i++) {
        char path[64], stat[512] = "";
        snprintf(path, sizeof path, "/proc/%d/wchan", (int)pid);
        FILE *f = fopen(path, "r");
        if (f) {
            fgets(stat, sizeof stat, f);
            fclose(f);
        }
        if (strstr(stat, "wait_woken") || strstr(stat, "n_tty_write"))
            break;
        int st;
        cr_assert_eq(waitpid(pid, &st, WNOHANG), 0, "the tool ended before blocking");
        cr_assert_lt(i, 30000, "the tool never blocked on its progress line (wchan %s)", stat);
        usleep(1000);
    }
    cr_assert_eq(truncate(model, 4096), 0);
    cr_assert_eq(tcflow(slave, TCOON), 0);
    close(slave);
    char msg[8192];
    size_t got = 0;
    for (ssize_t n; got < sizeof msg - 1 && (n = read(master, msg + got, sizeof msg - 1 - got)) > 0;)
        got += (size_t)n; /* ends with EIO when the tool has closed the terminal */
    msg[got] = '\0';
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    close(master);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d; stderr: %s", status,
              msg);
    cr_expect_not_null(strstr(msg, "changed size while being read"), "stderr: %s", msg);
    cr_expect_neq(access(out, F_OK), 0, "%s was left", out);
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        cr_expect(e->d_name[0] != '.' || !e->d_name[1] || !strcmp(e->d_name, ".."),
                  "%s was left", e->d_name);
    closedir(d);
}
