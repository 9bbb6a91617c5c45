/* The GGUF writer, read back by the reader: the seed chapter's eight tests in spirit. Expected
 * numbers come from outside the code under test: the chapter's own 408-byte sketch file (its
 * "where every field went" table, 327 / 57 / 384 / 408, and its 4096-alignment exercise),
 * FORMATS.md's block sizes, and the chapter's qwen2.5 7B tensor sizes. */
#include "tensormap.h"

#include <criterion/criterion.h>

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A fresh path in $TMPDIR (or /tmp) for this process; the caller unlinks it. */
static const char *tmp_path(const char *tag)
{
    static char path[4][512];
    static unsigned n;
    const char *dir = getenv("TMPDIR");
    char *p = path[n++ % 4];
    snprintf(p, sizeof path[0], "%s/tm-writer-%ld-%u-%s.gguf", dir && *dir ? dir : "/tmp",
             (long)getpid(), n, tag);
    return p;
}

static tm_file *open_ok(const char *path)
{
    tm_file *f = NULL;
    tm_error err = {0};
    tm_status st = tm_open(path, 0, &f, &err);
    cr_assert_eq(st, TM_OK, "%s: %s: %s", path, tm_status_name(st), err.message);
    return f;
}

static tm_writer *new_writer(void)
{
    tm_writer *w = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK, "%s", err.message);
    return w;
}

#define OK(call)                                                                   \
    do {                                                                           \
        tm_error e_ = {0};                                                         \
        tm_status s_ = (call);                                                     \
        (void)e_;                                                                  \
        cr_assert_eq(s_, TM_OK, "%s: %s", #call, tm_status_name(s_));              \
    } while (0)

static void finish(tm_writer *w, const char *path)
{
    tm_error err = {0};
    tm_status st = tm_writer_finish(w, path, &err);
    cr_assert_eq(st, TM_OK, "finish %s: %s", path, err.message);
}

/* ---- the chapter's sketch file ------------------------------------------------------------ */

static const float SKETCH[6] = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f};

/* The chapter's 408-byte file: five entries, one 3 x 2 f32 tensor, alignment 64 declared.
 * The string values have the lengths that make its entries 46, 55, 33, 34 and 76 bytes long.
 * at[] receives the writer's own counter before each field (the chapter's middle table). */
static tm_writer *sketch(uint32_t alignment, bool declare, uint64_t at[7])
{
    static const char *const tokens[] = {"apple", "bread", "chess"};
    tm_writer *w = new_writer();
    const uint32_t block_count = 1;
    if (alignment)
        cr_assert_eq(tm_writer_set_alignment(w, alignment, NULL), TM_OK);
    at[0] = tm_writer_header_bytes(w);
    cr_assert_eq(tm_writer_kv_str(w, "general.architecture", "counts", 6, NULL), TM_OK);
    at[1] = tm_writer_header_bytes(w);
    cr_assert_eq(tm_writer_kv_str(w, "general.name", "the block85 sketch file", 23, NULL), TM_OK);
    at[2] = tm_writer_header_bytes(w);
    if (declare)
        cr_assert_eq(tm_writer_kv_scalar(w, "general.alignment", TM_V_U32, &alignment, NULL),
                     TM_OK);
    else /* the same 33 bytes under another key, so the layout does not move */
        cr_assert_eq(tm_writer_kv_scalar(w, "general.alignmenX", TM_V_U32, &alignment, NULL),
                     TM_OK);
    at[3] = tm_writer_header_bytes(w);
    cr_assert_eq(tm_writer_kv_scalar(w, "counts.block_count", TM_V_U32, &block_count, NULL),
                 TM_OK);
    at[4] = tm_writer_header_bytes(w);
    cr_assert_eq(tm_writer_kv_str_array(w, "counts.tokens", tokens, NULL, 3, NULL), TM_OK);
    at[5] = tm_writer_header_bytes(w);
    const uint64_t ne[2] = {3, 2};
    cr_assert_eq(tm_writer_tensor(w, "blk.0.counts.weight", TM_TYPE_F32, 2, ne, SKETCH, NULL),
                 TM_OK);
    at[6] = tm_writer_header_bytes(w);
    return w;
}

static void expect_sketch_values(const tm_file *f, uint64_t data_start)
{
    const tm_tensor *t = tm_tensor_find(f, "blk.0.counts.weight");
    cr_assert_not_null(t);
    cr_assert_eq(t->n_dims, 2);
    cr_assert_eq(t->ne[0], 3);
    cr_assert_eq(t->ne[1], 2);
    cr_assert_eq(t->type, TM_TYPE_F32);
    cr_assert_eq(t->offset, 0);
    cr_assert_eq(t->n_bytes, 24);
    cr_assert_eq((const uint8_t *)t->data, tm_file_bytes(f) + data_start);
    float got[6];
    memcpy(got, t->data, sizeof got);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(got[i], SKETCH[i], "weight %d: %g, wrote %g", i, got[i], SKETCH[i]);
}

Test(writer, the_sketch_file_reads_back_the_same_numbers)
{
    uint64_t at[7];
    const char *path = tmp_path("sketch");
    finish(sketch(64, true, at), path);
    /* the chapter's "where every field went" */
    const uint64_t chapter[7] = {24, 70, 125, 158, 192, 268, 327};
    for (int i = 0; i < 7; i++)
        cr_assert_eq(at[i], chapter[i], "field %d at %llu, the chapter says %llu", i,
                     (unsigned long long)at[i], (unsigned long long)chapter[i]);

    tm_file *f = open_ok(path);
    const tm_layout *l = tm_file_layout(f);
    cr_assert_eq(l->version, 3);
    cr_assert_eq(l->n_kv, 5);
    cr_assert_eq(l->n_tensors, 1);
    cr_assert_eq(l->alignment, 64);
    cr_assert(l->alignment_declared);
    cr_assert_eq(l->kv_end, 268);
    cr_assert_eq(l->infos_end, 327);
    cr_assert_eq(l->padding, 57);
    cr_assert_eq(l->data_start, 384);
    cr_assert_eq(l->file_size, 408);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_size, 408);
    expect_sketch_values(f, 384);

    uint64_t n;
    cr_assert_eq(tm_kv_get_uint(tm_arch_key(f, "block_count"), &n), TM_OK);
    cr_assert_eq(n, 1);
    const tm_kv *tokens = tm_kv_find(f, "counts.tokens");
    cr_assert_not_null(tokens);
    cr_assert_eq(tokens->count, 3);
    tm_str_iter it;
    tm_str s;
    cr_assert_eq(tm_kv_strings(tokens, &it), TM_OK);
    cr_assert(tm_str_next(&it, &s) && s.len == 5 && memcmp(s.ptr, "apple", 5) == 0);
    cr_assert(tm_str_next(&it, &s) && s.len == 5 && memcmp(s.ptr, "bread", 5) == 0);
    cr_assert(tm_str_next(&it, &s) && s.len == 5 && memcmp(s.ptr, "chess", 5) == 0);
    cr_assert_not(tm_str_next(&it, &s));
    tm_close(f);
    unlink(path);
}

Test(writer, alignment_comes_out_of_the_file)
{
    const uint32_t aligns[] = {16, 64, 4096};
    for (size_t i = 0; i < 3; i++) {
        uint64_t at[7];
        const char *path = tmp_path("align");
        finish(sketch(aligns[i], true, at), path);
        tm_file *f = open_ok(path);
        const tm_layout *l = tm_file_layout(f);
        const uint64_t a = aligns[i], start = (327 + a - 1) / a * a;
        cr_assert_eq(l->alignment, a);
        cr_assert(l->alignment_declared);
        cr_assert_eq(l->infos_end, 327);
        cr_assert_eq(l->data_start, start);
        cr_assert_eq(l->padding, start - 327);
        cr_assert_eq(l->file_size, start + 24);
        expect_sketch_values(f, start);
        tm_close(f);
        unlink(path);
    }
    /* the chapter's exercise 1: at 4096 the header is still 327 bytes, the padding 3769, the
     * data starts at 4096 and the file is 4120 bytes */
    uint64_t at[7];
    const char *path = tmp_path("align4096");
    finish(sketch(4096, true, at), path);
    tm_file *f = open_ok(path);
    cr_assert_eq(tm_file_layout(f)->padding, 3769);
    cr_assert_eq(tm_file_layout(f)->file_size, 4120);
    tm_close(f);
    unlink(path);
}

Test(writer, no_declared_alignment_reads_at_32)
{
    uint64_t at[7];
    const char *path = tmp_path("default");
    finish(sketch(0, false, at), path);
    tm_file *f = open_ok(path);
    const tm_layout *l = tm_file_layout(f);
    cr_assert_eq(l->alignment, 32);
    cr_assert_not(l->alignment_declared);
    cr_assert_eq(l->data_start, 352); /* 327 rounded up to 32 */
    expect_sketch_values(f, 352);
    tm_close(f);
    unlink(path);
}

/* The failure the chapter pins: read the weights where the infos end instead of at the aligned
 * data start, and six ordinary floats come back, none of them a weight, with no error. */
Test(writer, reading_at_the_end_of_the_infos_is_silently_wrong)
{
    uint64_t at[7];
    const char *path = tmp_path("noalign");
    finish(sketch(64, true, at), path);
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(path, 0, &f, &err), TM_OK);
    const tm_layout *l = tm_file_layout(f);
    float wrong[6];
    memcpy(wrong, tm_file_bytes(f) + l->infos_end + 0 /* offset of the tensor */, sizeof wrong);
    int same = 0;
    for (int i = 0; i < 6; i++) {
        cr_assert(isfinite(wrong[i])); /* every check a careful reader might make passes */
        same += wrong[i] == SKETCH[i];
    }
    cr_assert_eq(same, 0, "%d of 6 came back the number that went in", same);
    cr_assert_eq(err.code, TM_OK); /* and nothing anywhere said so */
    tm_close(f);
    unlink(path);
}

/* ---- refusals ----------------------------------------------------------------------------- */

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp);
    uint8_t *buf = malloc(1 << 16);
    *len = fread(buf, 1, 1 << 16, fp);
    fclose(fp);
    return buf;
}

Test(writer, bad_magic_is_refused_naming_both)
{
    uint64_t at[7];
    const char *path = tmp_path("magic");
    finish(sketch(64, true, at), path);
    size_t len;
    uint8_t *buf = slurp(path, &len);
    memcpy(buf, "GGML", 4);
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open_buffer(buf, len, 0, &f, &err), TM_NOT_MODEL, "%s", err.message);
    cr_assert_null(f);
    cr_assert(strstr(err.message, "\"GGML\"") && strstr(err.message, "\"GGUF\""), "%s",
              err.message);
    free(buf);
    unlink(path);
}

/* Cut the sketch at every byte: each prefix is refused, never read past its end (each is a
 * copy of exactly that many bytes, so the sanitizers see an overread), and the message names
 * the field or entry the cut fell in, or a count the file can no longer hold. */
Test(writer, a_header_cut_short_names_the_field)
{
    uint64_t at[7];
    const char *path = tmp_path("cut");
    finish(sketch(64, true, at), path);
    size_t len;
    uint8_t *whole = slurp(path, &len);
    cr_assert_eq(len, 408);
    for (size_t k = 0; k < len; k++) {
        uint8_t *p = malloc(k ? k : 1);
        memcpy(p, whole, k);
        tm_file *f = NULL;
        tm_error err = {0};
        tm_status st = tm_open_buffer(p, k, 0, &f, &err);
        cr_assert_neq(st, TM_OK, "a %zu-byte prefix opened", k);
        cr_assert_null(f);
        /* want: the field or entry the cut is in; also: a count checked against the bytes
         * left before that entry is reached (an earlier, equally right refusal) */
        char want[64] = "", also[64] = "", also2[64] = "";
        if (k < 4) {
            snprintf(want, sizeof want, k ? "too short" : "empty");
        } else if (k < 8) {
            snprintf(want, sizeof want, "version");
        } else if (k < 16) {
            snprintf(want, sizeof want, "tensor count");
        } else if (k < 24) {
            snprintf(want, sizeof want, "metadata count");
        } else if (k < at[5]) {
            int e = 0;
            while (k >= at[e + 1])
                e++;
            snprintf(want, sizeof want, "metadata entry %d of 5", e);
            snprintf(also, sizeof also, "metadata count 5");
            snprintf(also2, sizeof also2, "tensor count 1");
        } else if (k < at[6]) {
            snprintf(want, sizeof want, "tensor info 0 of 1");
            snprintf(also, sizeof also, "tensor count 1");
        } else if (k < 384) {
            snprintf(want, sizeof want, "data would start at byte 384");
        } else {
            snprintf(want, sizeof want, "'blk.0.counts.weight'"); /* its bytes are cut */
        }
        cr_assert(strstr(err.message, want) || (also[0] && strstr(err.message, also)) ||
                      (also2[0] && strstr(err.message, also2)),
                  "cut at %zu: wanted '%s' (or '%s', '%s'): %s", k, want, also, also2,
                  err.message);
        cr_assert(err.offset == TM_NO_OFFSET || err.offset <= k, "cut at %zu: offset %llu", k,
                  (unsigned long long)err.offset);
        free(p);
    }
    free(whole);
    unlink(path);
}

/* ---- sizes from shape and type alone ------------------------------------------------------ */

/* FORMATS.md: elements and bytes per block. */
static const struct {
    tm_type type;
    uint32_t elems, bytes;
} BLOCKS[] = {
    {TM_TYPE_F32, 1, 4},     {TM_TYPE_F16, 1, 2},     {TM_TYPE_BF16, 1, 2},
    {TM_TYPE_Q4_0, 32, 18},  {TM_TYPE_Q4_1, 32, 20},  {TM_TYPE_Q5_0, 32, 22},
    {TM_TYPE_Q5_1, 32, 24},  {TM_TYPE_Q8_0, 32, 34},  {TM_TYPE_Q2_K, 256, 84},
    {TM_TYPE_Q3_K, 256, 110}, {TM_TYPE_Q4_K, 256, 144}, {TM_TYPE_Q5_K, 256, 176},
    {TM_TYPE_Q6_K, 256, 210}, {TM_TYPE_F64, 1, 8},     {TM_TYPE_I8, 1, 1},
    {TM_TYPE_I16, 1, 2},     {TM_TYPE_I32, 1, 4},     {TM_TYPE_I64, 1, 8},
};
#define N_BLOCKS (sizeof BLOCKS / sizeof BLOCKS[0])

Test(writer, tensor_bytes_come_from_shape_and_type_alone)
{
    tm_writer *w = new_writer();
    char name[32];
    for (size_t i = 0; i < N_BLOCKS; i++) {
        const uint64_t ne[3] = {2 * (uint64_t)BLOCKS[i].elems, 3, 5}; /* 30 blocks */
        snprintf(name, sizeof name, "t%zu", i);
        cr_assert_eq(tm_writer_tensor(w, name, BLOCKS[i].type, 3, ne, NULL, NULL), TM_OK);
    }
    /* the chapter's qwen2.5 7B: three sizes it works out by hand */
    const uint64_t embd[2] = {3584, 152064}, norm[1] = {3584};
    OK(tm_writer_tensor(w, "token_embd.weight", TM_TYPE_Q4_K, 2, embd, NULL, &e_));
    OK(tm_writer_tensor(w, "output.weight", TM_TYPE_Q6_K, 2, embd, NULL, &e_));
    OK(tm_writer_tensor(w, "output_norm.weight", TM_TYPE_F32, 1, norm, NULL, &e_));
    const char *path = tmp_path("sizes");
    finish(w, path);
    tm_file *f = open_ok(path);
    for (size_t i = 0; i < N_BLOCKS; i++) {
        snprintf(name, sizeof name, "t%zu", i);
        const tm_tensor *t = tm_tensor_find(f, name);
        cr_assert_not_null(t);
        cr_assert_eq(t->n_bytes, 30 * (uint64_t)BLOCKS[i].bytes, "%s: %llu bytes",
                     tm_type_name(BLOCKS[i].type), (unsigned long long)t->n_bytes);
        cr_assert_eq(t->n_elements, 30 * (uint64_t)BLOCKS[i].elems);
    }
    cr_assert_eq(tm_tensor_find(f, "token_embd.weight")->n_bytes, 306561024);
    cr_assert_eq(tm_tensor_find(f, "output.weight")->n_bytes, 447068160);
    cr_assert_eq(tm_tensor_find(f, "output_norm.weight")->n_bytes, 14336);
    /* 750 MB of tensors written as holes: the file takes almost no disk */
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq((uint64_t)st.st_size, tm_file_layout(f)->file_size);
    cr_assert_lt((uint64_t)st.st_blocks * 512, UINT64_C(1) << 20, "%lld blocks",
                 (long long)st.st_blocks);
    tm_close(f);
    unlink(path);
}

Test(writer, part_blocks_and_unknown_types_refused_by_the_writer)
{
    tm_writer *w = new_writer();
    const uint64_t before = tm_writer_header_bytes(w);
    tm_error err = {0};
    const uint64_t part[2] = {100, 2}, whole[1] = {256};
    cr_assert_eq(tm_writer_tensor(w, "part", TM_TYPE_Q4_K, 2, part, NULL, &err), TM_BAD_VALUE);
    cr_assert(strstr(err.message, "q4_K") && strstr(err.message, "256") &&
              strstr(err.message, "'part'"), "%s", err.message);
    cr_assert_eq(tm_writer_tensor(w, "gone", (tm_type)4, 1, whole, NULL, &err), TM_UNSUPPORTED);
    cr_assert(strstr(err.message, "q4_2"), "a removed type is named: %s", err.message);
    cr_assert_eq(tm_writer_tensor(w, "what", (tm_type)99, 1, whole, NULL, &err), TM_UNSUPPORTED);
    cr_assert(strstr(err.message, "99"), "%s", err.message);
    cr_assert_eq(tm_writer_tensor(w, "st", TM_TYPE_U8, 1, whole, NULL, &err), TM_UNSUPPORTED,
                 "a safetensors-only type has no GGUF id");
    const uint64_t five[5] = {1, 1, 1, 1, 1}, zero_dims[1] = {32};
    cr_assert_eq(tm_writer_tensor(w, "5d", TM_TYPE_F32, 5, five, NULL, &err), TM_BAD_VALUE);
    cr_assert_eq(tm_writer_tensor(w, "0d", TM_TYPE_F32, 0, zero_dims, NULL, &err), TM_BAD_VALUE);
    const uint64_t zero[2] = {32, 0};
    cr_assert_eq(tm_writer_tensor(w, "zero", TM_TYPE_F32, 2, zero, NULL, &err), TM_BAD_VALUE);
    cr_assert(strstr(err.message, "dimension 1 is 0"), "%s", err.message);
    cr_assert_eq(tm_writer_tensor(w, "", TM_TYPE_F32, 1, whole, NULL, &err), TM_BAD_VALUE);
    const uint64_t huge[2] = {UINT64_C(1) << 40, UINT64_C(1) << 40};
    cr_assert_eq(tm_writer_tensor(w, "huge", TM_TYPE_F32, 2, huge, NULL, &err), TM_LIMIT);
    /* nothing of the refused tensors went into the header */
    cr_assert_eq(tm_writer_header_bytes(w), before);
    tm_writer_free(w);
}

/* Patch one field of a file the writer made, where the writer's counter says it is. */
static tm_status open_patched(const char *path, uint64_t at, const void *bytes, size_t n,
                              tm_error *err)
{
    size_t len;
    uint8_t *buf = slurp(path, &len);
    memcpy(buf + at, bytes, n);
    tm_file *f = NULL;
    tm_status st = tm_open_buffer(buf, len, 0, &f, err);
    tm_close(f);
    free(buf);
    return st;
}

Test(writer, part_blocks_and_unknown_types_refused_by_the_reader)
{
    tm_writer *w = new_writer();
    const uint64_t ne[1] = {256};
    const uint64_t info_at = tm_writer_header_bytes(w); /* no metadata: the info is first */
    OK(tm_writer_tensor(w, "blk.0.x", TM_TYPE_Q4_K, 1, ne, NULL, &e_));
    const uint64_t info_end = tm_writer_header_bytes(w);
    const char *path = tmp_path("patch");
    finish(w, path);
    /* info: u64 name length, 7 bytes of name, u32 n_dims, u64 ne[0], u32 type, u64 offset */
    const uint64_t ne0_at = info_at + 8 + 7 + 4, type_at = info_end - 12;
    cr_assert_eq(type_at, ne0_at + 8);
    tm_error err = {0};
    const uint8_t ne0_100[8] = {100};
    cr_assert_eq(open_patched(path, ne0_at, ne0_100, 8, &err), TM_BAD_VALUE, "%s", err.message);
    cr_assert(strstr(err.message, "blk.0.x") && strstr(err.message, "q4_K"), "%s", err.message);
    const uint8_t type_99[4] = {99};
    cr_assert_eq(open_patched(path, type_at, type_99, 4, &err), TM_UNSUPPORTED, "%s",
                 err.message);
    cr_assert(strstr(err.message, "blk.0.x") && strstr(err.message, "99"), "%s", err.message);
    char at[32];
    snprintf(at, sizeof at, "byte %llu", (unsigned long long)type_at);
    cr_assert(strstr(err.message, at), "the message names %s: %s", at, err.message);
    unlink(path);
}

/* ---- every value type --------------------------------------------------------------------- */

Test(writer, every_value_type_round_trips)
{
    const uint8_t u8 = 255, b1 = 1, b0 = 0;
    const int8_t i8 = -128;
    const uint16_t u16 = 65535;
    const int16_t i16 = -32768;
    const uint32_t u32 = 4000000000u;
    const int32_t i32 = INT32_MIN;
    const float f32 = -1.5e-30f;
    const uint64_t u64 = UINT64_MAX;
    const int64_t i64 = INT64_MIN;
    const double f64 = 3.141592653589793;
    tm_writer *w = new_writer();
    OK(tm_writer_kv_scalar(w, "u8", TM_V_U8, &u8, &e_));
    OK(tm_writer_kv_scalar(w, "i8", TM_V_I8, &i8, &e_));
    OK(tm_writer_kv_scalar(w, "u16", TM_V_U16, &u16, &e_));
    OK(tm_writer_kv_scalar(w, "i16", TM_V_I16, &i16, &e_));
    OK(tm_writer_kv_scalar(w, "u32", TM_V_U32, &u32, &e_));
    OK(tm_writer_kv_scalar(w, "i32", TM_V_I32, &i32, &e_));
    OK(tm_writer_kv_scalar(w, "f32", TM_V_F32, &f32, &e_));
    OK(tm_writer_kv_scalar(w, "true", TM_V_BOOL, &b1, &e_));
    OK(tm_writer_kv_scalar(w, "false", TM_V_BOOL, &b0, &e_));
    OK(tm_writer_kv_str(w, "str", "h\xc3\xa9llo\n\0x", 9, &e_));
    OK(tm_writer_kv_scalar(w, "u64", TM_V_U64, &u64, &e_));
    OK(tm_writer_kv_scalar(w, "i64", TM_V_I64, &i64, &e_));
    OK(tm_writer_kv_scalar(w, "f64", TM_V_F64, &f64, &e_));
    const char *path = tmp_path("values");
    finish(w, path);

    tm_file *f = open_ok(path);
    cr_assert_eq(tm_n_kv(f), 13);
    tm_value v;
#define GET(key, vt)                                                    \
    do {                                                                \
        const tm_kv *kv_ = tm_kv_find(f, key);                          \
        cr_assert_not_null(kv_, "%s", key);                             \
        cr_assert_eq(kv_->type, vt, "%s", key);                         \
        cr_assert_eq(tm_kv_value(kv_, &v), TM_OK, "%s", key);           \
    } while (0)
    GET("u8", TM_V_U8);
    cr_assert_eq(v.as.u, 255);
    GET("i8", TM_V_I8);
    cr_assert_eq(v.as.i, -128);
    GET("u16", TM_V_U16);
    cr_assert_eq(v.as.u, 65535);
    GET("i16", TM_V_I16);
    cr_assert_eq(v.as.i, -32768);
    GET("u32", TM_V_U32);
    cr_assert_eq(v.as.u, 4000000000u);
    GET("i32", TM_V_I32);
    cr_assert_eq(v.as.i, INT32_MIN);
    GET("f32", TM_V_F32);
    cr_assert_eq((float)v.as.f, -1.5e-30f);
    GET("true", TM_V_BOOL);
    cr_assert(v.as.b);
    GET("false", TM_V_BOOL);
    cr_assert_not(v.as.b);
    GET("str", TM_V_STRING);
    cr_assert_eq(v.as.s.len, 9);
    cr_assert_eq(memcmp(v.as.s.ptr, "h\xc3\xa9llo\n\0x", 9), 0);
    GET("u64", TM_V_U64);
    cr_assert_eq(v.as.u, UINT64_MAX);
    GET("i64", TM_V_I64);
    cr_assert_eq(v.as.i, INT64_MIN);
    GET("f64", TM_V_F64);
    cr_assert_eq(v.as.f, 3.141592653589793);
#undef GET
    tm_close(f);
    unlink(path);
}

Test(writer, arrays_of_every_type_round_trip)
{
    /* five elements of each fixed-size type, extremes included, as bytes of the native type */
    const uint8_t a_u8[5] = {0, 1, 127, 128, 255};
    const int8_t a_i8[5] = {-128, -1, 0, 1, 127};
    const uint16_t a_u16[5] = {0, 1, 256, 32768, 65535};
    const int16_t a_i16[5] = {-32768, -1, 0, 1, 32767};
    const uint32_t a_u32[5] = {0, 1, 65536, 2147483648u, 4294967295u};
    const int32_t a_i32[5] = {INT32_MIN, -1, 0, 1, INT32_MAX};
    const float a_f32[5] = {0.5f, -1.5f, 1e30f, -0.0f, 3.4028235e38f};
    const uint8_t a_bool[5] = {1, 0, 1, 1, 0};
    const uint64_t a_u64[5] = {0, 1, UINT64_C(1) << 32, UINT64_C(1) << 63, UINT64_MAX};
    const int64_t a_i64[5] = {INT64_MIN, -1, 0, 1, INT64_MAX};
    const double a_f64[5] = {1e300, -0.0, 0.1, -2.5, 5e-324};
    const struct {
        tm_vtype type;
        const void *elems;
        uint32_t size;
    } arrays[] = {
        {TM_V_U8, a_u8, 1},   {TM_V_I8, a_i8, 1},     {TM_V_U16, a_u16, 2}, {TM_V_I16, a_i16, 2},
        {TM_V_U32, a_u32, 4}, {TM_V_I32, a_i32, 4},   {TM_V_F32, a_f32, 4}, {TM_V_BOOL, a_bool, 1},
        {TM_V_U64, a_u64, 8}, {TM_V_I64, a_i64, 8},   {TM_V_F64, a_f64, 8},
    };
    const size_t n_arrays = sizeof arrays / sizeof arrays[0];
    static const char *const strs[4] = {"", "one", "h\xc3\xa9", ""};
    tm_writer *w = new_writer();
    char key[32];
    for (size_t i = 0; i < n_arrays; i++) {
        snprintf(key, sizeof key, "arr.%s", tm_vtype_name(arrays[i].type));
        OK(tm_writer_kv_array(w, key, arrays[i].type, arrays[i].elems, 5, &e_));
        snprintf(key, sizeof key, "empty.%s", tm_vtype_name(arrays[i].type));
        OK(tm_writer_kv_array(w, key, arrays[i].type, NULL, 0, &e_));
    }
    OK(tm_writer_kv_str_array(w, "arr.str", strs, NULL, 4, &e_));
    OK(tm_writer_kv_str_array(w, "empty.str", NULL, NULL, 0, &e_));
    OK(tm_writer_kv_str(w, "empty_string", "", 0, &e_));
    const char *path = tmp_path("arrays");
    finish(w, path);

    tm_file *f = open_ok(path);
    for (size_t i = 0; i < n_arrays; i++) {
        snprintf(key, sizeof key, "arr.%s", tm_vtype_name(arrays[i].type));
        const tm_kv *kv = tm_kv_find(f, key);
        cr_assert_not_null(kv, "%s", key);
        cr_assert_eq(kv->type, TM_V_ARRAY);
        cr_assert_eq(kv->elem_type, arrays[i].type, "%s", key);
        cr_assert_eq(kv->count, 5);
        cr_assert_eq(kv->data_bytes, 5 * arrays[i].size);
        /* the stored bytes are the little-endian values: on this little-endian test machine,
         * the native bytes */
        cr_assert_eq(memcmp(kv->data, arrays[i].elems, 5 * arrays[i].size), 0, "%s", key);
        tm_value v;
        cr_assert_eq(tm_kv_elem(kv, 4, &v), TM_OK, "%s", key);
        cr_assert_eq(tm_kv_elem(kv, 5, &v), TM_INVALID_ARG, "%s: past the end", key);
        snprintf(key, sizeof key, "empty.%s", tm_vtype_name(arrays[i].type));
        kv = tm_kv_find(f, key);
        cr_assert_not_null(kv, "%s", key);
        cr_assert_eq(kv->elem_type, arrays[i].type);
        cr_assert_eq(kv->count, 0);
        cr_assert_eq(kv->data_bytes, 0);
    }
    tm_value v;
    cr_assert_eq(tm_kv_elem(tm_kv_find(f, "arr.i64"), 0, &v), TM_OK);
    cr_assert_eq(v.as.i, INT64_MIN);
    cr_assert_eq(tm_kv_elem(tm_kv_find(f, "arr.u64"), 4, &v), TM_OK);
    cr_assert_eq(v.as.u, UINT64_MAX);
    cr_assert_eq(tm_kv_elem(tm_kv_find(f, "arr.f64"), 4, &v), TM_OK);
    cr_assert_eq(v.as.f, 5e-324);
    cr_assert_eq(tm_kv_elem(tm_kv_find(f, "arr.bool"), 1, &v), TM_OK);
    cr_assert_not(v.as.b);

    const tm_kv *kv = tm_kv_find(f, "arr.str");
    cr_assert_eq(kv->elem_type, TM_V_STRING);
    cr_assert_eq(kv->count, 4);
    tm_str_iter it;
    tm_str s;
    cr_assert_eq(tm_kv_strings(kv, &it), TM_OK);
    for (int i = 0; i < 4; i++) {
        cr_assert(tm_str_next(&it, &s));
        cr_assert_eq(s.len, strlen(strs[i]));
        cr_assert_eq(memcmp(s.ptr, strs[i], s.len), 0);
    }
    cr_assert_not(tm_str_next(&it, &s));
    kv = tm_kv_find(f, "empty.str");
    cr_assert_eq(kv->count, 0);
    cr_assert_eq(tm_kv_strings(kv, &it), TM_OK);
    cr_assert_not(tm_str_next(&it, &s));
    cr_assert_eq(tm_kv_get_str(tm_kv_find(f, "empty_string"), &s), TM_OK);
    cr_assert_eq(s.len, 0);
    tm_close(f);
    unlink(path);
}

/* ---- the writer's own rules --------------------------------------------------------------- */

Test(writer, refuses_what_the_format_does_not_allow)
{
    tm_writer *w = new_writer();
    tm_error err = {0};
    const uint64_t before = tm_writer_header_bytes(w);
    cr_assert_eq(tm_writer_set_alignment(w, 0, &err), TM_BAD_VALUE);
    cr_assert_eq(tm_writer_set_alignment(w, 48, &err), TM_BAD_VALUE);
    cr_assert(strstr(err.message, "48"), "%s", err.message);
    cr_assert_eq(tm_writer_set_version(w, 1, &err), TM_BAD_VERSION);
    cr_assert_eq(tm_writer_set_version(w, 2, &err), TM_OK);
    const uint8_t two = 2;
    cr_assert_eq(tm_writer_kv_scalar(w, "b", TM_V_BOOL, &two, &err), TM_BAD_VALUE);
    cr_assert_eq(tm_writer_kv_scalar(w, "s", TM_V_STRING, "x", &err), TM_BAD_VALUE);
    cr_assert_eq(tm_writer_kv_array(w, "a", TM_V_ARRAY, "x", 1, &err), TM_BAD_VALUE,
                 "arrays of arrays are not written");
    cr_assert_eq(tm_writer_kv_scalar(w, "t", (tm_vtype)13, "x", &err), TM_BAD_VALUE);
    cr_assert_eq(tm_writer_kv_str(w, "", "x", 1, &err), TM_BAD_VALUE, "a key is not empty");
    char *long_key = malloc(TM_MAX_NAME_LEN + 2);
    memset(long_key, 'k', TM_MAX_NAME_LEN + 1);
    long_key[TM_MAX_NAME_LEN + 1] = '\0';
    cr_assert_eq(tm_writer_kv_str(w, long_key, "x", 1, &err), TM_LIMIT);
    const uint64_t ne[1] = {32};
    cr_assert_eq(tm_writer_tensor(w, long_key, TM_TYPE_F32, 1, ne, NULL, &err), TM_LIMIT);
    long_key[TM_MAX_NAME_LEN] = '\0'; /* exactly the limit is allowed */
    cr_assert_eq(tm_writer_kv_str(w, long_key, "x", 1, &err), TM_OK, "%s", err.message);
    free(long_key);
    const uint64_t after_key = tm_writer_header_bytes(w);
    cr_assert_eq(after_key, before + 8 + TM_MAX_NAME_LEN + 4 + 8 + 1,
                 "only the accepted entry was added");
    cr_assert_eq(tm_writer_tensor_at(w, "odd", TM_TYPE_F32, 1, ne, 16, NULL, &err), TM_LAYOUT);
    cr_assert(strstr(err.message, "16") && strstr(err.message, "32"), "%s", err.message);
    cr_assert_eq(tm_writer_tensor(w, "first", TM_TYPE_F32, 1, ne, NULL, &err), TM_OK);
    cr_assert_eq(tm_writer_set_alignment(w, 64, &err), TM_INVALID_ARG,
                 "the alignment cannot change under placed tensors");
    tm_writer_free(w);
    tm_writer_free(NULL);
}

Test(writer, explicit_offsets_holes_version_2_and_data_size)
{
    tm_writer *w = new_writer();
    OK(tm_writer_set_version(w, 2, &e_));
    const float a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const uint64_t ne[1] = {8};
    OK(tm_writer_tensor_at(w, "late", TM_TYPE_F32, 1, ne, 64, a, &e_));
    OK(tm_writer_tensor_at(w, "early", TM_TYPE_F32, 1, ne, 0, NULL, &e_));
    OK(tm_writer_tensor(w, "next", TM_TYPE_F32, 1, ne, a, &e_)); /* after the end: 96 */
    OK(tm_writer_set_data_size(w, 1000, &e_));
    const char *path = tmp_path("offsets");
    finish(w, path);
    tm_file *f = open_ok(path);
    const tm_layout *l = tm_file_layout(f);
    cr_assert_eq(l->version, 2);
    cr_assert_eq(l->data_size, 1000);
    cr_assert_eq(l->tensors_end, 128);
    cr_assert_eq(tm_tensor_find(f, "late")->offset, 64);
    cr_assert_eq(tm_tensor_find(f, "next")->offset, 96);
    cr_assert_eq(memcmp(tm_tensor_find(f, "late")->data, a, sizeof a), 0);
    cr_assert_eq(memcmp(tm_tensor_find(f, "next")->data, a, sizeof a), 0);
    const float zeros[8] = {0};
    cr_assert_eq(memcmp(tm_tensor_find(f, "early")->data, zeros, sizeof zeros), 0,
                 "a hole reads as zeros");
    tm_close(f);
    unlink(path);
}

Test(writer, a_failed_finish_leaves_no_file_and_frees_the_writer)
{
    tm_writer *w = new_writer();
    tm_error err = {0};
    cr_assert_eq(tm_writer_finish(w, "/nonexistent-dir/x.gguf", &err), TM_IO);
    cr_assert(strstr(err.message, "/nonexistent-dir/x.gguf"), "%s", err.message);
    cr_assert_eq(access("/nonexistent-dir/x.gguf", F_OK), -1);
    /* (the writer was freed: the sanitizers' leak check would see it otherwise) */
}

/* Keys and names in the writer's messages are quoted and escaped as the readers quote them:
 * an edit or merge copies keys from untrusted files, and these messages reach a terminal. */
Test(writer, messages_quote_keys_and_names_escaped)
{
    static const char key[] = "k\x1b]0;title\x07\xc2\x9b";
    tm_writer *w = new_writer();
    tm_error err = {0};
    const uint8_t two = 2;
    const uint64_t ne[1] = {32};
    const char *msgs[3];
    char saved[3][TM_ERROR_MESSAGE_MAX];
    cr_assert_eq(tm_writer_kv_scalar(w, key, TM_V_BOOL, &two, &err), TM_BAD_VALUE);
    msgs[0] = strcpy(saved[0], err.message);
    cr_assert_eq(tm_writer_kv_str(w, key, NULL, 1, &err), TM_INVALID_ARG);
    msgs[1] = strcpy(saved[1], err.message);
    cr_assert_eq(tm_writer_tensor_at(w, key, TM_TYPE_F32, 1, ne, 16, NULL, &err), TM_LAYOUT);
    msgs[2] = strcpy(saved[2], err.message);
    for (int i = 0; i < 3; i++) {
        for (const char *p = msgs[i]; *p; p++)
            cr_expect((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f,
                      "message %d holds raw byte 0x%02x", i, (unsigned char)*p);
        cr_expect(strstr(msgs[i], "'k\\x1b]0;title\\x07\\xc2\\x9b'"), "message %d: %s", i,
                  msgs[i]);
    }
    tm_writer_free(w);
}

/* What the reader refuses across entries the writer refuses too, at finish and before any file
 * exists: duplicate keys, duplicate tensor names, overlapping tensors, a general.alignment that
 * is not the u32 the data is laid out with. */
Test(writer, refuses_what_the_reader_would_refuse_and_writes_nothing)
{
    const char *path = tmp_path("refused");
    const uint64_t ne[1] = {8};
    const uint32_t a32 = 32, a64 = 64;
    const uint64_t a32_u64 = 32;
    for (int c = 0; c < 5; c++) {
        tm_writer *w = new_writer();
        tm_error err = {0};
        tm_status want = TM_BAD_VALUE;
        const char *words = "general.alignment";
        if (c == 0) {
            OK(tm_writer_kv_str(w, "k", "a", 1, &e_));
            OK(tm_writer_kv_str(w, "k", "b", 1, &e_));
            want = TM_DUPLICATE;
            words = "metadata entries 0 and 1 are both named 'k'";
        } else if (c == 1) {
            OK(tm_writer_tensor(w, "t", TM_TYPE_F32, 1, ne, NULL, &e_));
            OK(tm_writer_tensor(w, "t", TM_TYPE_F32, 1, ne, NULL, &e_));
            want = TM_DUPLICATE;
            words = "tensors 0 and 1 are both named 't'";
        } else if (c == 2) {
            OK(tm_writer_tensor_at(w, "a", TM_TYPE_F32, 1, ne, 0, NULL, &e_));
            OK(tm_writer_tensor_at(w, "b", TM_TYPE_F32, 1, ne, 64, NULL, &e_));
            OK(tm_writer_tensor_at(w, "c", TM_TYPE_F32, 1, ne, 32, NULL, &e_)); /* 32..64: fits */
            OK(tm_writer_tensor_at(w, "d", TM_TYPE_F32, 1, ne, 0, NULL, &e_));  /* on a */
            want = TM_LAYOUT;
            words = "overlap";
        } else if (c == 3) {
            OK(tm_writer_kv_scalar(w, "general.alignment", TM_V_U32, &a64, &e_)); /* writer: 32 */
        } else {
            OK(tm_writer_kv_scalar(w, "general.alignment", TM_V_U64, &a32_u64, &e_));
        }
        cr_expect_eq(tm_writer_finish(w, path, &err), want, "case %d: %s", c, err.message);
        cr_expect(strstr(err.message, words), "case %d: %s", c, err.message);
        cr_expect_neq(access(path, F_OK), 0, "case %d: a file was written", c);
    }
    /* the same alignment declared as the u32 it is: written */
    tm_writer *w = new_writer();
    OK(tm_writer_kv_scalar(w, "general.alignment", TM_V_U32, &a32, &e_));
    finish(w, path);
    unlink(path);
}
