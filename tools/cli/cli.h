/* What the tensormap tool's command files share. The tool uses only include/tensormap.h. */
#ifndef TM_CLI_H
#define TM_CLI_H

#include "tensormap.h"

#include <signal.h>
#include <stdio.h>

/* "s" after a count that is not 1: "%" PRIu64 " tensor%s", n, CLI_S(n) */
#define CLI_S(n) ((n) == 1 ? "" : "s")

/* Exit codes: 0 success, 1 a bad or inconsistent file (or a failed operation), 2 bad usage. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* One subcommand. help is the whole help text (usage line first); it is printed by
 * `tensormap help NAME` and `NAME --help`, and the man page is generated from it. */
typedef struct cli_command {
    const char *name;
    const char *alias;     /* another name for the same command, or NULL */
    const char *summary;   /* one line for `tensormap --help` */
    const char *help;
    int (*run)(int argc, char **argv); /* argv[0] is the command's name */
} cli_command;

/* The options that apply to every command (tools/tensormap.c), listed by --help and the man
 * page. anywhere: may also follow the command (main takes it out of argv before dispatch). */
typedef struct cli_global_option {
    const char *name, *short_name;
    bool anywhere;
    unsigned open_flag; /* what it adds to cli_open_flags */
    const char *help;
} cli_global_option;
extern const cli_global_option cli_global_options[];

/* Options that apply to every command (set by main before dispatch). */
extern unsigned cli_open_flags;   /* TM_OPEN_NO_MMAP with --no-mmap, TM_OPEN_ALL_SHARDS with
                                   * --all-shards, TM_OPEN_ONE_SHARD with --one-shard */

/* Open FILE as the user named it: a path, "-" for standard input, or ollama:NAME[:TAG].
 * On failure prints "tensormap: FILE: message" to stderr and returns NULL. */
tm_file *cli_open(const char *arg, unsigned extra_flags);
/* The same, saying nothing when the library refuses the file: *err holds why (err->code is
 * TM_OK when the failure was already reported, an ollama: name that does not resolve). */
tm_file *cli_open_err(const char *arg, unsigned extra_flags, tm_error *err);
/* Print "tensormap: CONTEXT: message (at byte N)" for a library error. */
void cli_report(const char *context, const tm_error *err);
/* Print "tensormap: message" to stderr. */
void cli_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print a tm_str safely: control bytes, DEL, C1 and bidirectional controls, backslash, quote
 * and invalid UTF-8 escaped (one helper, in cli.c, for every string from a file). */
void cli_print_str(FILE *out, tm_str s, uint64_t max_bytes);
/* Print a message or a path (which may quote a file's bytes: a library message, a shard name
 * from an index) with the same escapes, but backslash, quote, newline and tab kept. */
void cli_print_text(FILE *out, const char *text);
/* A number or bool value in words: integers exactly, floats in the fewest digits that read back
 * as the same f32 or f64. Strings and arrays give "". */
void cli_scalar_text(const tm_value *v, char *buf, size_t size);
/* A float in the fewest significant digits that read back as the same value: as an f32 when
 * is_f32 (1e-06 stays 1e-06), else as a double. "nan", "inf", "-inf" when not finite. */
void cli_float_text(double v, bool is_f32, char *buf, size_t size);

/* Arguments of a command that takes boolean flags and one FILE: `NAME [--flag ...] FILE`.
 * flags ends with {NULL, NULL}; names without the dashes. --help prints cmd->help. Returns -1
 * when the command should go on (*file set), otherwise the exit code: CLI_OK after --help,
 * CLI_USAGE (with a message and the usage line) for an unknown option or not one FILE. */
typedef struct cli_flag {
    const char *name;
    bool *set;
} cli_flag;
int cli_simple_args(int argc, char **argv, const cli_command *cmd, const cli_flag *flags,
                    const char **file);
/* Flush stdout: CLI_FAIL with a message when the output could not be written, else rc. */
int cli_finish_output(int rc);

/* tools/cli/sigbus.c: from now on a SIGBUS (the mapped file was truncated by another process)
 * prints "tensormap: NAME changed size while being read" and exits 1. cli_open calls it for
 * every file it opens (NAME is the file whose mapping faulted, else the last one watched). */
void cli_sigbus_watch(const char *name);
/* After the open succeeds: the file's mapping, so that a SIGBUS inside it names this file
 * even when the command holds several. */
void cli_sigbus_mapped(const tm_file *f);

/* tools/cli/output.c: every file the tool writes (see the comment at its top; new commands
 * must use it). cli_open protects every shard of each file it opens; other inputs (a JSON
 * file) are protected with cli_output_protect_path. */
typedef struct cli_output cli_output;
void cli_output_protect_path(const char *path);
void cli_output_protect_file(const tm_file *f, const char *arg);
/* False, with a message, when path is the same file as an input (through any link). */
bool cli_output_allowed(const char *path);
/* "-" for standard output, a device or FIFO written directly, or a regular file written via
 * a temporary file. NULL with a message on failure. */
cli_output *cli_output_open(const char *path);
FILE *cli_output_stream(const cli_output *o);
/* The path, or "standard output". */
const char *cli_output_name(const cli_output *o);
/* rc CLI_OK: flush and put the file in place (CLI_FAIL with a message if that fails); else
 * remove the temporary file. Frees o; returns the final exit code. */
int cli_output_close(cli_output *o, int rc);
/* What a command checks of the file it wrote before it replaces anything: written is the
 * temporary file (NULL for a device, which cannot be read back). TM_OK puts it in place;
 * anything else, with err saying why, removes it. */
typedef tm_status (*cli_output_check)(void *ctx, const char *written, tm_error *err);
/* The file a GGUF writer describes, written to path as cli_output_open writes a stream (the
 * temporary file guarded against signals), read back, checked by check (when not NULL), and put
 * in place. Frees w. The error names what failed; on failure path holds what it held before. */
tm_status cli_output_model(tm_writer *w, const char *path, cli_output_check check, void *ctx,
                           tm_error *err);
/* tm_st_writer_begin and tm_st_writer_finish (which frees w), the temporary file guarded in
 * between; on a failure after begin, tm_st_writer_free(w) and cli_signal_forget(*guard). */
tm_status cli_output_st_begin(tm_st_writer *w, const char *path, int *guard, tm_error *err);
tm_status cli_output_st_finish(tm_st_writer *w, int guard, tm_error *err);
/* tools/cli/sigbus.c: a file of ours (a temporary file being written) that a signal ending the
 * process removes first; returns the slot to pass to cli_signal_forget once the file is no
 * longer ours to remove (renamed into place, or removed), or -1 (out of memory: not guarded).
 * The first call installs the handlers. */
int cli_signal_guard(const char *path);
void cli_signal_forget(int slot);
/* Hold the terminating signals (they wait, and arrive at the release) across a step that must
 * not be cut between creating a file and guarding it, or between renaming files of a set. */
void cli_signals_hold(sigset_t *saved);
void cli_signals_release(const sigset_t *saved);
/* Whether a terminating signal is waiting (held) to be delivered. */
bool cli_signal_pending(void);

/* tools/cli/output_set.c: files that are one output (shards and their index, a split set),
 * put in place together. _new: the set's files go in dir and are named STEM-NNNNN-of-NNNNN
 * SUFFIX (its index, if any, apart). _replaces: a file named so that the output being replaced
 * holds (its old index names it): removed once the new set is in place, if it is not one of the
 * new files. _add: a file of the set, final path path (checked by cli_output_allowed); returns
 * the name to write it under now (hidden, beside it; guarded against signals), NULL after a
 * message. _ready: false, with a message, when dir holds a file named as the set's that is
 * neither one of them nor of the output replaced (call it after the last _add, before writing).
 * _finish: rc CLI_OK renames every file into place, entry (one of the paths added, or NULL)
 * last, then removes the replaced output's other files; otherwise removes what was written.
 * Frees s; returns the exit code. */
typedef struct cli_output_set cli_output_set;
cli_output_set *cli_output_set_new(const char *dir, const char *stem, const char *suffix);
void cli_output_set_replaces(cli_output_set *s, const char *name);
const char *cli_output_set_add(cli_output_set *s, const char *path);
bool cli_output_set_ready(const cli_output_set *s);
int cli_output_set_finish(cli_output_set *s, int rc, const char *entry);

/* tools/cli/in_place.c: a local file changed in place (edit without -o). _begin locks it
 * (flock, exclusive, without waiting) before it is read: NULL, with a message, when another
 * process holds the lock, or the path is not a local regular file. _still says whether the path
 * still names the file locked (err says why not); cli_in_place_check is the same as a
 * cli_output_check, so the rename replaces only that file. _end releases the lock. */
typedef struct cli_in_place cli_in_place;
cli_in_place *cli_in_place_begin(const char *path);
bool cli_in_place_still(const cli_in_place *ip, tm_error *err);
tm_status cli_in_place_check(void *ctx, const char *written, tm_error *err);
void cli_in_place_end(cli_in_place *ip);
/* A header that keeps its size (tm_writer_header_bytes(w) == the file's infos_end), written
 * over the file's own: only the bytes that differ, [*at, *at + *n), under a rollback journal
 * beside the file (see in_place.c). Frees w. On failure the file is as it was; err says why. */
tm_status cli_in_place_patch(cli_in_place *ip, tm_writer *w, uint64_t *at, uint64_t *n,
                             tm_error *err);
/* Called by cli_open for every path: a journal left beside the file by an in-place edit that
 * died is replayed (the old bytes put back), unless a running edit holds the file's lock. */
void cli_in_place_recover(const char *path);

/* tools/cli/man.c: the man page in roff, built from the command table's help texts (the one
 * source of truth); `tensormap --man` prints it. */
void cli_man(FILE *out);

/* The command table, in tools/tensormap.c. */
extern const cli_command *const cli_commands[];
const cli_command *cli_find_command(const char *name);

/* The commands, one file each in tools/cmd/. */
extern const cli_command cmd_info, cmd_meta, cmd_tensors;
extern const cli_command cmd_stack, cmd_layer, cmd_check, cmd_bytes, cmd_stats, cmd_dump,
    cmd_tokens, cmd_header, cmd_write, cmd_sketch;
extern const cli_command cmd_compare, cmd_export;
extern const cli_command cmd_split, cmd_merge, cmd_edit;

#endif
