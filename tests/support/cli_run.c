/* The process side of the CLI tests: see test_cli.h. */
#include "test_cli.h"

#include <criterion/criterion.h>

#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (cap - n < 65536) {
            cap = cap * 2 + 65536;
            buf = realloc(buf, cap + 1);
            cr_assert_not_null(buf);
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static tool_result run_argv_in(const char *cwd, const char **argv)
{
    const char *tool = getenv("TM_TOOL");
    cr_assert_not_null(tool, "TM_TOOL is not set (run the tests through make)");
    char out_path[256], err_path[256];
    snprintf(out_path, sizeof out_path, "%s/.stdout", test_dir());
    snprintf(err_path, sizeof err_path, "%s/.stderr", test_dir());
    /* posix_spawn, not fork: glibc's (clone with CLONE_VM | CLONE_VFORK) starts the child
     * without copying the test process's page tables, the larger under ASan (the SAN suite's
     * system time 108 s -> 95 s on 2 CPUs). */
    posix_spawn_file_actions_t fa;
    cr_assert_eq(posix_spawn_file_actions_init(&fa), 0);
    cr_assert_eq(posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0), 0);
    cr_assert_eq(posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC,
                                                  0600), 0);
    cr_assert_eq(posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC,
                                                  0600), 0);
    if (cwd)
        cr_assert_eq(posix_spawn_file_actions_addchdir_np(&fa, cwd), 0);
    char *args[64] = {"tensormap"};
    for (int i = 1; i < 63 && argv[i]; i++) {
        args[i] = strdup(argv[i]); /* posix_spawn wants char * */
        cr_assert_not_null(args[i]);
    }
    fflush(NULL);
    pid_t pid;
    const int failed = posix_spawn(&pid, tool, &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    for (int i = 1; args[i]; i++)
        free(args[i]);
    if (failed) {
        /* what a child that could not open its files, change directory or exec the tool
         * reports: exit 127, nothing written */
        for (int i = 0; i < 2; i++) {
            int fd = open(i ? err_path : out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            cr_assert_neq(fd, -1, "cannot create %s", i ? err_path : out_path);
            close(fd);
        }
        tool_result r = {127, NULL, NULL, 0};
        r.out = read_all(out_path, &r.out_len);
        r.err = read_all(err_path, NULL);
        return r;
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    tool_result r = {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), NULL, NULL, 0};
    r.out = read_all(out_path, &r.out_len);
    r.err = read_all(err_path, NULL);
    return r;
}

static tool_result run_argv(const char **argv)
{
    return run_argv_in(NULL, argv);
}

tool_result tool_run_in(const char *cwd, const char *const *args)
{
    const char *argv[64] = {NULL};
    for (int i = 0; i < 62 && args[i]; i++)
        argv[i + 1] = args[i];
    return run_argv_in(cwd, argv);
}

static tool_result run_va(const char *first, va_list ap)
{
    const char *argv[64] = {NULL, first};
    int n = 2;
    for (const char *a; n < 63 && (a = va_arg(ap, const char *)) != NULL;)
        argv[n++] = a;
    argv[n] = NULL;
    return run_argv(argv);
}

tool_result tool_run(const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    tool_result r = run_va(arg, ap);
    va_end(ap);
    return r;
}

char *shell_output(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap + 1);
    cr_assert_not_null(out);
    for (size_t got; (got = fread(out + n, 1, cap - n, p)) > 0;) {
        n += got;
        if (n == cap) {
            out = realloc(out, (cap *= 2) + 1);
            cr_assert_not_null(out);
        }
    }
    out[n] = '\0';
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

void tool_result_free(tool_result *r)
{
    free(r->out);
    free(r->err);
}

json_t *tool_json(int status, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    tool_result r = run_va(arg, ap);
    va_end(ap);
    cr_assert_eq(r.status, status, "exit %d (expected %d); stderr: %s", r.status, status, r.err);
    json_error_t e;
    json_t *j = json_loadb(r.out, r.out_len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &e);
    cr_assert_not_null(j, "not JSON (%s at line %d): %.400s", e.text, e.line, r.out);
    tool_result_free(&r);
    return j;
}

static char dir[64];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void test_cleanup(void)
{
    if (dir[0])
        nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

const char *test_dir(void)
{
    if (!dir[0]) {
        strcpy(dir, "/tmp/tm_cli_XXXXXX");
        cr_assert_not_null(mkdtemp(dir));
    }
    return dir;
}

const char *test_path(const char *name)
{
    static char paths[8][256];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", test_dir(), name);
    return p;
}

uint64_t json_u64(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    cr_assert(json_is_integer(v) && json_integer_value(v) >= 0, "no number '%s'", key);
    return (uint64_t)json_integer_value(v);
}

int tool_start(const tool_spawn *how, const char *const *argv)
{
    const char *tool = getenv("TM_TOOL"), *shim = getenv("TM_FAIL_SHIM");
    cr_assert(tool && shim, "TM_TOOL and TM_FAIL_SHIM are not set (run the tests through make)");
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY), out = open("/dev/null", O_WRONLY);
        int err = how->err_path ? open(how->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600)
                                : open("/dev/null", O_WRONLY);
        if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
            dup2(err, 2) < 0 || (how->cwd && chdir(how->cwd) != 0))
            _exit(127);
        if (how->stop_at_path)
            setenv("TM_STOP_AT_PATH", how->stop_at_path, 1);
        for (int i = 0; how->shim_env && how->shim_env[i]; i++)
            putenv(strdup(how->shim_env[i]));
        if (how->stop_at_path || how->shim_env) {
            char asan[512];
            setenv("LD_PRELOAD", shim, 1);
            /* the shim comes before a sanitizer runtime in the preload list */
            snprintf(asan, sizeof asan, "%s:verify_asan_link_order=0",
                     getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "");
            setenv("ASAN_OPTIONS", asan, 1);
        }
        if (how->fsize_limit) {
            struct rlimit lim = {how->fsize_limit, how->fsize_limit}, none = {0, 0};
            signal(SIGXFSZ, SIG_DFL);
            setrlimit(RLIMIT_CORE, &none);
            setrlimit(RLIMIT_FSIZE, &lim);
        }
        char *args[64] = {NULL};
        for (int i = 0; i < 63 && argv[i]; i++)
            args[i] = strdup(argv[i]); /* execv wants char *; this is the child */
        execv(tool, args);
        _exit(127);
    }
    if (how->stop_at_path) {
        int st;
        cr_assert_eq(waitpid(pid, &st, WUNTRACED), pid);
        cr_assert(WIFSTOPPED(st), "%s ended (status %#x) before it wrote a file holding \"%s\"",
                  argv[1], st, how->stop_at_path);
    }
    return pid;
}

int tool_wait(int pid)
{
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
