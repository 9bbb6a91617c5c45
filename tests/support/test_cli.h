/* Running the tensormap tool from the CLI tests: the tool is a separate process (TM_TOOL), its
 * stdout and stderr captured whole, its --json output parsed with jansson. Files the tests
 * build go in a fresh directory per test. Failures abort the test (these are tests). */
#ifndef TM_TEST_CLI_H
#define TM_TEST_CLI_H

#include "tensormap.h"

#include <jansson.h>
#include <stddef.h>

typedef struct tool_result {
    int status;      /* exit code, or 128 + signal */
    char *out, *err; /* NUL-terminated (binary output may hold NULs: out_len counts them) */
    size_t out_len;
} tool_result;

/* Run TM_TOOL with the arguments (a NULL-terminated list), stdin from /dev/null. */
tool_result tool_run(const char *arg, ...) __attribute__((sentinel));
/* The same with a NULL-terminated array of arguments, run in the directory cwd (when not
 * NULL): a command that writes where it stands writes there. */
tool_result tool_run_in(const char *cwd, const char *const *args);
/* The standard output of `sh -c cmd` (malloc'ed); *status its exit status, -1 on a signal. */
char *shell_output(const char *cmd, int *status);
void tool_result_free(tool_result *r);
/* Run with the arguments, expect exit status `status`, and parse stdout as JSON. */
json_t *tool_json(int status, const char *arg, ...) __attribute__((sentinel));

/* Start the tool without waiting for it (argv[0] is the program name; stdin and stdout are
 * /dev/null, stderr goes to err_path or /dev/null), with, as asked: cwd, the shim
 * tests/shim/fail_io.c stopping it (SIGSTOP) before its first write to a file whose path holds
 * stop_at_path (tool_start then waits until it has stopped), RLIMIT_FSIZE at fsize_limit with
 * SIGXFSZ at its default action and no core dump, or the shim loaded with the settings in
 * shim_env ("TM_CRASH_AT=3", "TM_IO_LOG=PATH": a NULL-terminated list). Returns the pid. */
typedef struct tool_spawn {
    const char *cwd, *err_path, *stop_at_path;
    unsigned long long fsize_limit;
    const char *const *shim_env;
} tool_spawn;
int tool_start(const tool_spawn *how, const char *const *argv);
/* Wait for a started tool: its exit code, or 128 + the signal that ended it. */
int tool_wait(int pid);

/* A fresh directory for this test, and a path inside it (static storage, 8 slots in turn). */
const char *test_dir(void);
const char *test_path(const char *name);
/* Remove the test's directory: the suites' .fini. */
void test_cleanup(void);

/* A JSON member as an exact unsigned number (aborts the test when absent or not one). */
uint64_t json_u64(const json_t *obj, const char *key);

/* The whole file (malloc'ed) and its size. */
char *read_all(const char *path, size_t *len);

#endif
