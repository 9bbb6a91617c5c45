/* What the tensormap tool's files share, one section per file that defines it, from the floor
 * up: tools/cli/text.c calls no other file of the tool, every file may call it, and no command
 * file (tools/cmd/) calls another. The tool uses only include/tensormap.h. */
#ifndef TM_CLI_H
#define TM_CLI_H

#include "tensormap.h"

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>

/* ---- every file: exit codes, the command ------------------------------------------------- */

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

/* ---- tools/cli/text.c: messages, escaping, UTF-8, numbers as text (the floor) ------------ */

/* Print "tensormap: CONTEXT: message (at byte N)" for a library error. */
void cli_report(const char *context, const tm_error *err);
/* Print "tensormap: message" to stderr. */
void cli_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print a tm_str safely: control bytes, DEL, C1 and bidirectional controls, backslash, quote
 * and invalid UTF-8 escaped (one helper for every string from a file). */
void cli_print_str(FILE *out, tm_str s, uint64_t max_bytes);
/* Print a message or a path (which may quote a file's bytes: a library message, a shard name
 * from an index) with the same escapes, but backslash, quote, newline and tab kept. */
void cli_print_text(FILE *out, const char *text);
/* True when s is well-formed UTF-8 (no overlongs, no surrogates). */
bool cli_utf8_valid(const char *s, uint64_t len);
/* A name from the file made safe to print (cli_print_str's escapes), cut at max bytes with
 * "..." after; returns buf. */
const char *cli_name(tm_str s, uint64_t max, char *buf, size_t size);
/* A number or bool value in words: integers exactly, floats in the fewest digits that read back
 * as the same f32 or f64. Strings and arrays give "". */
void cli_scalar_text(const tm_value *v, char *buf, size_t size);
/* A float in the fewest significant digits that read back as the same value: as an f32 when
 * is_f32 (1e-06 stays 1e-06), else as a double. "nan", "inf", "-inf" when not finite. */
void cli_float_text(double v, bool is_f32, char *buf, size_t size);
/* Flush stdout: CLI_FAIL with a message when the output could not be written, else rc. */
int cli_finish_output(int rc);

/* ---- tools/cli/args.c: options, near misses, argument counts ----------------------------- */

/* The usage line of a command (the first line of its help) on stderr; returns CLI_USAGE. */
int cli_usage(const cli_command *cmd);
/* getopt_long (GNU: options and arguments in any order) with the tool's own messages: an
 * unknown option says so with the nearest name ("did you mean --json?"), a missing or
 * unwanted value says which option; the caller then returns cli_usage(cmd). shortopts as
 * getopt's, without a leading ':'. */
int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *opts,
               const cli_command *cmd);
/* The name among names[0..n) nearest to word when it is a near miss (a typo), else NULL. */
const char *cli_nearest(const char *word, const char *const *names, size_t n);
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
/* Boolean flags (as cli_simple_args) and from min to max positional arguments, which then start
 * at argv[*first]. Returns -1 when the command should go on, else the exit code (CLI_OK after
 * --help, CLI_USAGE with the usage line for an unknown option or a wrong count). */
int cli_flag_args(int argc, char **argv, const cli_command *cmd, const cli_flag *flags, int min,
                  int max, int *first);
/* -1 when have is within [min, max]; else a message saying which way it is off, the usage
 * line, and CLI_USAGE. */
int cli_count_args(const cli_command *cmd, int have, int min, int max);
/* The tensor NAME of f, or NULL after "FILE: no tensor 'NAME' (did you mean ...?)": the
 * caller returns CLI_USAGE (a name the file does not have is a usage error). */
const tm_tensor *cli_find_tensor(const tm_file *f, const char *file, const char *name);
/* Parse a whole decimal number; false on anything else or overflow. */
bool cli_parse_u64(const char *s, uint64_t *out);

/* ---- tools/cli/size.c: sizes on the command line ------------------------------------------- */

/* A size in bytes, the one reading of every command: digits with an optional fraction, then
 * optionally a unit in any case: KB, MB, GB, TB or K, M, G, T (powers of 1000, as Hugging
 * Face's max_shard_size and gguf-split count), KiB, MiB, GiB, TiB (powers of 1024); none is
 * bytes. Truncated to whole bytes. False for anything else, 0, or more than 64 bits hold. */
bool cli_parse_size(const char *s, uint64_t *out);
/* What cli_parse_size takes, for a refusal's message. */
#define CLI_SIZE_FORMS                                                                          \
    "a size above 0: bytes, or a number with KB, MB, GB, TB (or K, M, G, T: powers of 1000) "   \
    "or KiB, MiB, GiB, TiB (powers of 1024), such as 5GB, 1.5GiB or 500M"

/* ---- tools/cli/tensor.c: shapes, block names, offset order, decoding in chunks ----------- */

/* "896 x 151936": ne[0] first, as GGUF stores it. */
void cli_shape(const tm_tensor *t, char *buf, size_t size);
/* The shape as the file writes it: GGUF's "ne0 x ne1 ..." (cli_shape), safetensors'
 * "[d0, d1, ...]" (PyTorch order, slowest first). */
void cli_shape_of(const tm_file *f, const tm_tensor *t, char *buf, size_t size);
/* The block a tensor belongs to, taken out of its name: "blk.N.rest" (GGUF, anywhere after a
 * '.'), "layers.N.rest" (safetensors' model.layers.N.) or "h.N.rest" (GPT-2). */
typedef struct cli_block_name {
    bool in_block; /* false: the name has no block number (generic is the name itself) */
    uint64_t block;
    char *generic; /* the name with the number replaced by "N", NUL-terminated, owned */
    size_t rest;   /* where the part after "N." starts in generic (0 when not in a block) */
} cli_block_name;
/* One per tensor, in file order; NULL when out of memory. */
cli_block_name *cli_block_names(const tm_file *f);
void cli_block_names_free(cli_block_name *names, uint64_t n);
/* Tensor indices ordered by offset (then by index): malloc'ed, n_tensors entries. */
uint64_t *cli_offset_order(const tm_file *f);
/* n rounded up to a multiple of a (a power of two); false on overflow. */
bool cli_align_up(uint64_t n, uint64_t a, uint64_t *out);

/* Decode elements [first, first + n) of a tensor in chunks of at most chunk elements (both on
 * block boundaries), calling fn on each chunk in order. Memory is the caller's buffer. A
 * non-zero return from fn stops the walk and is returned; a decoding error returns -1 with
 * err filled. */
typedef int (*cli_chunk_fn)(const float *v, size_t n, void *ctx);
int cli_decode_chunks(const tm_tensor *t, uint64_t first, uint64_t n, float *buf, size_t chunk,
                      cli_chunk_fn fn, void *ctx, tm_error *err);
/* Ask the library to read t ahead (tm_prefetch), whole, while the tensor before it is decoded:
 * for the commands that read tensor after tensor. Only a tensor with a decoder, which those
 * commands read whole, so that nothing is fetched that would not have been. NULL does nothing,
 * and a plan refused is no error: the read then says what is wrong. */
void cli_prefetch(const tm_tensor *t);
/* A chunk size in elements for t: about 1 Mi floats (16 Mi for a remote file's tensor, whose
 * chunk is one fetch), a whole number of blocks. */
size_t cli_chunk_elems(const tm_tensor *t);
/* t itself, or for a remote file's decodable tensor, a copy of t whose data is its bytes
 * fetched once into *bytes (free it after): for a command that reads the values more than
 * once. NULL with err filled when the fetch fails. */
const tm_tensor *cli_tensor_in_memory(const tm_tensor *t, tm_tensor *copy, void **bytes,
                                     tm_error *err);
/* Bytes [off, off + len) of t's data: where they lie in the mapping, or fetched into scratch
 * (len bytes) for a remote file; NULL with err filled when the fetch fails. */
const uint8_t *cli_tensor_bytes(const tm_tensor *t, uint64_t off, uint64_t len, uint8_t *scratch,
                                tm_error *err);

/* ---- tools/cli/json.c: JSON values ------------------------------------------------------- */

/* An integer, exact: a JSON number when |v| <= 2^53 (what a double holds exactly), else a
 * decimal string; the same rule for every integer the tool writes (docs/json.md). */
json_t *cli_json_u64(uint64_t v);
json_t *cli_json_i64(int64_t v);
/* Read back what cli_json_u64 wrote (an integer >= 0 or a decimal string). */
bool cli_json_get_u64(const json_t *j, uint64_t *out);
bool cli_json_get_i64(const json_t *j, int64_t *out);
/* A string from the file: a JSON string when it is valid UTF-8, else {"hex": "..."} so that
 * every byte survives. */
json_t *cli_json_str(tm_str s);
/* Read back what cli_json_str wrote; *bytes is malloc'ed (the caller frees it). */
bool cli_json_get_bytes(const json_t *j, char **bytes, size_t *len);
/* The tensor's ne[0..n_dims) as an array. */
json_t *cli_json_ne(const tm_tensor *t);
/* A metadata value: scalar, string, or (for arrays) the list of elements. NULL on a type this
 * tool cannot show (nested arrays) or out of memory. */
json_t *cli_json_kv_value(const tm_kv *kv);
/* A metadata entry, the one shape every command uses: {"key", "type", "value"} for a scalar or
 * string; {"key", "type": "arr", "element_type", "count", "bytes"} for an array, plus "values"
 * (every element) when values is true. NULL when out of memory or for nested arrays. */
json_t *cli_json_kv(const tm_kv *kv, bool values);
/* A tensor info, the one shape every command uses: {"name", "type", "type_id", "ne",
 * "data_offset" (from the start of its data section, as the file stores it), "file_offset"
 * (absolute), "n_bytes"}, plus "shard" in a sharded checkpoint and "shape" (the file's order)
 * for safetensors. */
json_t *cli_json_tensor(const tm_file *f, const tm_tensor *t);
/* A float exactly and shortest: a JSON number in the fewest digits that read back as the same
 * f32 (is_f32) or double; infinities "inf", "-inf"; NaN "nan:0xBITS" (its bits, which NaNs
 * differ in). */
json_t *cli_json_float(double v, bool is_f32, uint64_t bits);
json_t *cli_json_f32(float v);
json_t *cli_json_f64(double v);
/* Print to stdout, indented, every real in its shortest form, and release. CLI_FAIL (with a
 * message) when root is NULL. */
int cli_json_emit(json_t *root);

/* ---- tools/cli/model.c: weights, in numbers and words ------------------------------------ */

/* Parameters and bytes, in all and per tensor type (in the order first met). */
enum { CLI_MAX_TYPES = 64 };
typedef struct cli_weights {
    uint64_t params, bytes;
    struct {
        tm_type type;
        uint64_t tensors, weights, bytes;
    } types[CLI_MAX_TYPES];
    size_t n_types;
} cli_weights;
void cli_count_weights(const tm_file *f, cli_weights *w);
/* 7615616512 as "7,615,616,512", and in words as "7.62 B" (K, M, B, T: thousands). */
void cli_grouped(uint64_t n, char *buf, size_t size);
void cli_count_words(uint64_t n, char *buf, size_t size);
/* A byte count in binary units, three significant digits: "1.75 GiB", "16 MiB". */
void cli_bytes_words(uint64_t n, char *buf, size_t size);

/* The memory at a context: tools/cli/memory.h. */

/* ---- tools/cli/progress.c ---------------------------------------------------------------- */

/* Progress of a long command on stderr ("dump --all: 12 of 99 tensors (12%)"), drawn only when
 * stderr is a terminal and the work has run for a second, wiped at the end. */
typedef struct cli_progress {
    const char *what, *unit;
    uint64_t total, done;
    double next; /* when to draw next (monotonic seconds) */
    bool on, shown;
} cli_progress;
void cli_progress_start(cli_progress *p, const char *what, const char *unit, uint64_t total);
void cli_progress_add(cli_progress *p, uint64_t n);
void cli_progress_end(cli_progress *p);

/* ---- tools/cli/sigbus.c ------------------------------------------------------------------ */

/* From now on a SIGBUS (the mapped file was truncated by another process) prints
 * "tensormap: NAME changed size while being read" and exits 1. cli_open calls it for every
 * file it opens (NAME is the file whose mapping faulted, else the last one watched). */
void cli_sigbus_watch(const char *name);
/* After the open succeeds: the file's mapping, so that a SIGBUS inside it names this file
 * even when the command holds several. */
void cli_sigbus_mapped(const tm_file *f);

/* ---- tools/cli/output.c ------------------------------------------------------------------ */

/* Every file the tool writes (see the comment at the top of output.c; new commands must use
 * it). cli_open protects every shard of each file it opens; other inputs (a JSON file) are
 * protected with cli_output_protect_path. */
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

/* ---- tools/cli/ollama.c ------------------------------------------------------------------ */

/* The blob path of ollama:NAME[:TAG] (spec without the "ollama:" prefix); malloc'ed. On
 * failure NULL with a message in msg. */
char *cli_ollama_path(const char *spec, char *msg, size_t msg_size);

/* ---- tools/cli/open.c: the file the user named ------------------------------------------- */

/* Options that apply to every command (set by main before dispatch). */
extern unsigned cli_open_flags;   /* TM_OPEN_TRUNCATED; TM_OPEN_NO_MMAP with --no-mmap,
                                   * TM_OPEN_ALL_SHARDS with --all-shards, TM_OPEN_ONE_SHARD with
                                   * --one-shard */

/* Open FILE as the user named it: a path, "-" for standard input, or ollama:NAME[:TAG].
 * On failure prints "tensormap: FILE: message" to stderr and returns NULL. */
tm_file *cli_open(const char *arg, unsigned extra_flags);
/* The same, saying nothing when the library refuses the file: *err holds why (err->code is
 * TM_OK when the failure was already reported, an ollama: name that does not resolve). */
tm_file *cli_open_err(const char *arg, unsigned extra_flags, tm_error *err);
/* The same, saying nothing at all: resolves ollama:NAME[:TAG], watches SIGBUS over the open
 * and records the mapping (cli_sigbus_watch, cli_sigbus_mapped, cli_output_protect_file). NULL
 * on failure with *err saying why: the library's refusal, or an ollama: name that does not
 * resolve (TM_NOT_FOUND, no offset, *unresolved set to true when unresolved is not NULL). */
tm_file *cli_open_quiet(const char *arg, unsigned extra_flags, tm_error *err, bool *unresolved);
/* The tensors of a file cut off after its header that its end cuts (tm_tensor_is_cut); both
 * openers say the file is cut off, cli_open_err on stderr and check in its report. */
uint64_t cli_cut_tensors(const tm_file *f);

/* ---- tools/cli/model_write.c: for the commands that write a model ------------------------ */

/* A writer with f's version and alignment and verification on; then finish it into path (st:
 * how building it went; w is freed either way) with a progress line on stderr when it is a
 * terminal and the work takes over a second. CLI_OK, or CLI_FAIL after "tensormap: PATH:
 * message". */
tm_status cli_model_writer(const tm_file *f, tm_writer **w, tm_error *err);
int cli_model_finish(tm_writer *w, tm_status st, tm_error *err, const char *path);
/* The same, with a check run on the file written before it replaces path (cli_output_model). */
int cli_model_finish_checked(tm_writer *w, tm_status st, tm_error *err, const char *path,
                             cli_output_check check, void *ctx);
/* A split set's own keys (split.*, and the older general.split*), which are never the
 * model's metadata: split writes its own, merge leaves them out. */
bool cli_split_key(tm_str key);

/* ---- tools/cli/hfnames.c: Hugging Face names <-> llama.cpp's (llama, qwen2) -------------- */

/* Whether a tensor's rows were permuted by llama.cpp's converter: by n_head for the query
 * projection, by n_head_kv for the key projection (llama only). */
enum { CLI_PERM_NONE, CLI_PERM_Q, CLI_PERM_K };
/* The other side's name of a tensor into out (NUL-terminated); false when the map has none.
 * *perm tells whether it is a query or key projection (weight or bias). */
bool cli_hf_to_gguf(tm_str name, char *out, size_t cap, int *perm);
bool cli_gguf_to_hf(tm_str name, char *out, size_t cap, int *perm);
/* Within heads of hd rows, the source (Hugging Face) row of permuted row g. */
uint64_t cli_permuted_source_unit(uint64_t g, uint64_t hd);
/* llama's attention.head_count and head_count_kv (which defaults to head_count); prints why
 * and returns false when head_count is missing. */
bool cli_llama_head_counts(const tm_file *gguf, uint64_t *n_head, uint64_t *n_head_kv);

/* ---- tools/cli/man.c --------------------------------------------------------------------- */

/* The man page in roff, built from the command table's help texts (the one source of truth);
 * `tensormap --man` prints it. */
void cli_man(FILE *out);
/* Usage line k of cmd's help (from 0), its continuation lines joined, from the command's name
 * on ("dump [--format raw|npy|lz4] [--rows A:B] FILE TENSOR -o OUT"); returns its length, 0
 * when there is no line k. */
size_t cli_usage_line(const cli_command *cmd, size_t k, char *buf, size_t cap);
/* What a usage line takes: its words after the name, option groups ("[--json]",
 * "[--set KEY=VALUE]...") left out ("FILE [TENSOR ...]", "A B", "FILE TENSOR -o OUT"). */
void cli_usage_args(const char *usage, char *buf, size_t cap);
/* What FILE may be (paths, -, ollama:, URLs and hf: when this build reads them, shards), for
 * --help and the man page. */
const char *cli_inputs_help(void);

/* ---- tools/cli/commands.c: the command table --------------------------------------------- */

/* The options that apply to every command, listed by --help and the man page. anywhere: may
 * also follow the command (main takes it out of argv before dispatch). */
typedef struct cli_global_option {
    const char *name, *short_name;
    bool anywhere;
    unsigned open_flag; /* what it adds to cli_open_flags */
    const char *help;
} cli_global_option;
/* CLI_N_GLOBAL_OPTIONS entries, then {NULL}: commands.c checks the count when it compiles, so
 * an array of CLI_N_GLOBAL_OPTIONS holds every option's name. */
enum { CLI_N_GLOBAL_OPTIONS = 6 };
extern const cli_global_option cli_global_options[];
extern const cli_command *const cli_commands[];
const cli_command *cli_find_command(const char *name);

/* ---- tools/cmd/: the commands, one file each -------------------------------------------- */

extern const cli_command cmd_info, cmd_meta, cmd_tensors;
extern const cli_command cmd_stack, cmd_layer, cmd_check, cmd_bytes, cmd_stats, cmd_dump,
    cmd_tokens, cmd_header, cmd_write, cmd_sketch;
extern const cli_command cmd_compare, cmd_export;
extern const cli_command cmd_split, cmd_merge, cmd_edit;
extern const cli_command cmd_hash;
extern const cli_command cmd_download;

#endif
