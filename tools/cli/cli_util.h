/* What the inspecting and dumping commands share: JSON values (tools/cli/json.c) and tensor
 * helpers (tools/cli/tensor.c). Everything here uses only include/tensormap.h. */
#ifndef TM_CLI_UTIL_H
#define TM_CLI_UTIL_H

#include "cli.h"

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>

/* ---- cli_json.c ---------------------------------------------------------------------------- */

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
/* Print to stdout, indented, every real in its shortest form, and release. CLI_FAIL (with a message) when root is NULL. */
int cli_json_emit(json_t *root);

/* ---- cli_tensor.c -------------------------------------------------------------------------- */

/* True when s is well-formed UTF-8 (no overlongs, no surrogates). */
bool cli_utf8_valid(const char *s, uint64_t len);
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
/* -1 when have is within [min, max]; else a message saying which way it is off, the usage
 * line, and CLI_USAGE. */
int cli_count_args(const cli_command *cmd, int have, int min, int max);
/* The tensor NAME of f, or NULL after "FILE: no tensor 'NAME' (did you mean ...?)": the
 * caller returns CLI_USAGE (a name the file does not have is a usage error). */
const tm_tensor *cli_find_tensor(const tm_file *f, const char *file, const char *name);
/* Boolean flags (as cli_simple_args) and from min to max positional arguments, which then start
 * at argv[*first]. Returns -1 when the command should go on, else the exit code (CLI_OK after
 * --help, CLI_USAGE with the usage line for an unknown option or a wrong count). */
int cli_flag_args(int argc, char **argv, const cli_command *cmd, const cli_flag *flags, int min,
                  int max, int *first);
/* Parse a whole decimal number; false on anything else or overflow. */
bool cli_parse_u64(const char *s, uint64_t *out);
/* A name from the file made safe to print (cli_print_str's escapes), cut at max bytes with
 * "..." after; returns buf. */
const char *cli_name(tm_str s, uint64_t max, char *buf, size_t size);
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

/* ---- cli_model.c --------------------------------------------------------------------------- */

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

/* ---- cli_progress.c ------------------------------------------------------------------------ */

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

/* ---- cli_ollama.c -------------------------------------------------------------------------- */

/* The blob path of ollama:NAME[:TAG] (spec without the "ollama:" prefix); malloc'ed. On
 * failure NULL with a message in msg. */
char *cli_ollama_path(const char *spec, char *msg, size_t msg_size);

/* tools/cli/model_write.c: for the commands that write a model. A writer with f's version and
 * alignment and verification on; then finish it into path (st: how building it went; w is
 * freed either way) with a progress line on stderr when it is a terminal and the work takes
 * over a second. CLI_OK, or CLI_FAIL after "tensormap: PATH: message". */
tm_status cli_model_writer(const tm_file *f, tm_writer **w, tm_error *err);
int cli_model_finish(tm_writer *w, tm_status st, tm_error *err, const char *path);

/* tools/cmd/split.c: a split set's own keys (split.*, and the older general.split*), which are
 * never the model's metadata. */
bool cli_split_key(tm_str key);

/* ---- cli_hfnames.c: Hugging Face names <-> llama.cpp's (llama, qwen2) ----------------------- */

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

#endif
