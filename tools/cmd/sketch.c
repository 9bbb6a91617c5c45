/* tensormap sketch: a small GGUF file to learn the format on. Write a file whose numbers are known,
 * say where every field went (the writer's own byte counter, not arithmetic done here), read it
 * back and compare. --noalign reads the weights where the tensor infos end instead of at the
 * aligned data start: no error anywhere, and the numbers are wrong, which is the point shown. */
#include "../cli/cli.h"

#include <getopt.h>
#include <inttypes.h>
#include <string.h>

static const char help[] =
    "usage: tensormap sketch [--align N] [--noalign] [--json] OUT\n"
    "\n"
    "Write a small GGUF file of known contents to OUT: five metadata entries (architecture\n"
    "\"counts\", a name, general.alignment, counts.block_count, a three-string array) and one\n"
    "3 x 2 f32 tensor whose info record ends off an alignment boundary, so the padding is not\n"
    "zero. Print where every field went, as the writer counted it; read the file back with the\n"
    "library and show what the reader found, then the six numbers written and read.\n"
    "\n"
    "  --align N   the declared alignment (a power of two, default 64): the header keeps its\n"
    "              length, the padding and the file grow, the tensor's offset stays 0\n"
    "  --noalign   read the weights where the tensor infos end, ignoring the alignment: no\n"
    "              error, and the numbers that come back are not the ones written\n"
    "  --json      the same as one JSON object\n"
    "\n"
    "Exit status 0 when the file reads back as written (with --noalign: always, the wrong\n"
    "numbers being what it shows).\n";

enum { N_VALUES = 6, MAX_FIELDS = 16 };
static const float values[N_VALUES] = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f};

typedef struct fieldpos {
    uint64_t at, size;
    char what[96];
} fieldpos;

typedef struct sketch {
    fieldpos fields[MAX_FIELDS];
    size_t n;
} sketch;

static void mark(sketch *s, uint64_t at, uint64_t end, const char *what)
{
    if (s->n < MAX_FIELDS) {
        fieldpos *f = &s->fields[s->n++];
        f->at = at;
        f->size = end - at;
        snprintf(f->what, sizeof f->what, "%s", what);
    }
}

/* Build the file, recording each field from the writer's counter before and after the add. */
static bool write_sketch(const char *path, uint32_t align, sketch *s, tm_error *err)
{
    static const char *const tokens[] = {"alpha", "bravo", "delta"};
    static const uint64_t ne[2] = {3, 2};
    uint32_t one = 1;
    tm_writer *w;
    if (tm_writer_new(&w, err) != TM_OK)
        return false;
    if (tm_writer_set_alignment(w, align, err) != TM_OK) {
        tm_writer_free(w);
        return false;
    }
    mark(s, 0, 4, "magic: the four bytes GGUF");
    mark(s, 4, 8, "version, a u32");
    mark(s, 8, 16, "how many tensors, a u64");
    mark(s, 16, 24, "how many metadata entries, a u64");
    uint64_t at = tm_writer_header_bytes(w);
#define ADD(call, what)                                                                            \
    do {                                                                                           \
        if ((call) != TM_OK) {                                                                     \
            tm_writer_free(w);                                                                     \
            return false;                                                                          \
        }                                                                                          \
        mark(s, at, tm_writer_header_bytes(w), what);                                              \
        at = tm_writer_header_bytes(w);                                                            \
    } while (0)
    ADD(tm_writer_kv_str(w, "general.architecture", "counts", 6, err),
        "metadata: general.architecture (string)");
    ADD(tm_writer_kv_str(w, "general.name", "tensormap's sketch file", 23, err),
        "metadata: general.name (string)");
    ADD(tm_writer_kv_scalar(w, "general.alignment", TM_V_U32, &align, err),
        "metadata: general.alignment (u32)");
    ADD(tm_writer_kv_scalar(w, "counts.block_count", TM_V_U32, &one, err),
        "metadata: counts.block_count (u32)");
    ADD(tm_writer_kv_str_array(w, "counts.tokens", tokens, NULL, 3, err),
        "metadata: counts.tokens (array)");
    ADD(tm_writer_tensor(w, "blk.0.counts.weight", TM_TYPE_F32, 2, ne, values, err),
        "info record: blk.0.counts.weight");
#undef ADD
    uint64_t data = (at + align - 1) / align * align;
    char what[96];
    snprintf(what, sizeof what, "padding up to the declared alignment of %" PRIu32, align);
    mark(s, at, data, what);
    snprintf(what, sizeof what, "tensor data: %d f32 weights", N_VALUES);
    mark(s, data, data + sizeof values, what);
    return tm_writer_finish(w, path, err) == TM_OK;
}

/* The six floats as the reader finds them: at the data start, or (noalign) where the infos end. */
static void read_back(const tm_file *f, const tm_tensor *t, bool noalign, float *got)
{
    const tm_layout *l = tm_file_layout(f);
    uint64_t base = noalign ? l->infos_end : l->data_start;
    memset(got, 0, N_VALUES * sizeof *got);
    if (base + t->offset + sizeof values <= l->file_size)
        memcpy(got, tm_file_bytes(f) + base + t->offset, sizeof values);
}

static int report(const char *path, uint32_t align, bool noalign, bool json, const sketch *s)
{
    tm_file *f = NULL;
    tm_error err = {0};
    if (tm_open(path, 0, &f, &err) != TM_OK) {
        cli_report(path, &err);
        return CLI_FAIL;
    }
    const tm_layout *l = tm_file_layout(f);
    const tm_tensor *t = tm_tensor_find(f, "blk.0.counts.weight");
    const tm_kv *toks = tm_kv_find(f, "counts.tokens");
    uint64_t blocks = 0;
    tm_kv_get_uint(tm_arch_key(f, "block_count"), &blocks);
    float got[N_VALUES];
    read_back(f, t, noalign, got);
    int same = 0;
    for (int i = 0; i < N_VALUES; i++)
        same += memcmp(&got[i], &values[i], sizeof got[i]) == 0;
    if (json) {
        json_t *fields = json_array(), *wrote = json_array(), *read = json_array();
        for (size_t i = 0; i < s->n; i++)
            json_array_append_new(
                fields, json_pack("{s:o, s:o, s:s}", "offset", cli_json_u64(s->fields[i].at), "bytes",
                                  cli_json_u64(s->fields[i].size), "field", s->fields[i].what));
        for (int i = 0; i < N_VALUES; i++) {
            json_array_append_new(wrote, cli_json_f32(values[i]));
            json_array_append_new(read, cli_json_f32(got[i]));
        }
        cli_json_emit(json_pack("{s:s, s:I, s:b, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:i}", "file",
                                path, "align", (json_int_t)align, "noalign", noalign, "fields", fields,
                                "file_size", cli_json_u64(l->file_size), "infos_end",
                                cli_json_u64(l->infos_end), "padding", cli_json_u64(l->padding),
                                "data_start", cli_json_u64(l->data_start), "written", wrote, "read",
                                read, "same", same));
    } else {
        printf("%s: a GGUF file written by this tool and read back by the library\n\n", path);
        printf("where every field went\n%8s %6s  %s\n", "at", "bytes", "field");
        for (size_t i = 0; i < s->n; i++)
            printf("%8" PRIu64 " %6" PRIu64 "  %s\n", s->fields[i].at, s->fields[i].size,
                   s->fields[i].what);
        printf("%" PRIu64 " bytes written to %s\n\n", l->file_size, path);
        tm_str arch = tm_architecture(f);
        printf("what the reader found\n");
        printf("  %-24s %" PRIu32 "\n  %-24s %" PRIu64 "\n  %-24s %" PRIu64 "\n", "version",
               l->version, "tensors", l->n_tensors, "metadata entries", l->n_kv);
        printf("  %-24s %" PRIu32 ", %s\n", "alignment", l->alignment,
               l->alignment_declared ? "read out of the metadata" : "the format's default");
        printf("  %-24s ", "architecture");
        cli_print_str(stdout, arch, 200); /* read back from the file, as any file's */
        printf(", %" PRIu64 " block, %" PRIu64 " tokens named\n", blocks, toks ? toks->count : 0);
        printf("  %-24s %" PRIu64 "\n  %-24s %" PRIu64 "\n  %-24s %" PRIu64 "\n",
               "last info record ends at", l->infos_end, "padding", l->padding,
               "tensor data starts at", l->data_start);
        fputs("  ", stdout);
        cli_print_str(stdout, t->name, 200);
        printf(": %" PRIu64 " weights, %" PRIu64 " bytes, at offset %" PRIu64 "\n",
               t->n_elements, t->n_bytes, t->offset);
        printf("  %" PRIu64 " + %" PRIu64 " + %" PRIu64 " = %" PRIu64 ", and the file is %" PRIu64
               "\n\n",
               l->infos_end, l->padding, t->n_bytes, l->infos_end + l->padding + t->n_bytes,
               l->file_size);
        printf(noalign ? "the numbers, read at the end of the info records, ignoring the "
                         "declared alignment\n"
                       : "the numbers, read at the declared alignment\n");
        char num[32];
        printf("  written");
        for (int i = 0; i < N_VALUES; i++)
            printf(" %s", (cli_float_text(values[i], true, num, sizeof num), num));
        printf("\n  read   ");
        for (int i = 0; i < N_VALUES; i++)
            printf(" %s", (cli_float_text(got[i], true, num, sizeof num), num));
        printf("\n%d of %d came back the number that went in\n", same, N_VALUES);
    }
    tm_close(f);
    return noalign || same == N_VALUES ? CLI_OK : CLI_FAIL;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"align", required_argument, NULL, 'a'},
                                         {"noalign", no_argument, NULL, 'n'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    uint64_t align = 64;
    bool noalign = false, json = false;
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "h", opts, &cmd_sketch)) != -1) {
        if (c == 'a' && (!cli_parse_u64(optarg, &align) || align == 0 || align > (1u << 30) ||
                         (align & (align - 1)) != 0)) {
            cli_errorf("sketch: --align wants a power of two up to 2^30, not '%s'", optarg);
            return CLI_USAGE;
        } else if (c == 'n') {
            noalign = true;
        } else if (c == 'j') {
            json = true;
        } else if (c == 'h') {
            return fputs(help, stdout), CLI_OK;
        } else if (c != 'a') {
            return cli_usage(&cmd_sketch);
        }
    }
    if ((c = cli_count_args(&cmd_sketch, argc - optind, 1, 1)) >= 0)
        return c;
    const char *path = argv[optind];
    sketch s = {0};
    tm_error err = {0};
    if (!cli_output_allowed(path)) /* no input today; the rule is the same for every output */
        return CLI_FAIL;
    if (!write_sketch(path, (uint32_t)align, &s, &err)) {
        cli_report(path, &err);
        return CLI_FAIL;
    }
    return report(path, (uint32_t)align, noalign, json, &s);
}

const cli_command cmd_sketch = {
    .name = "sketch",
    .alias = NULL,
    .summary = "write a small GGUF file of known contents, say where every field went, read it back",
    .help = help,
    .run = run,
};
