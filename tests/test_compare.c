/* tensormap compare, end to end: a tiny llama-shaped checkpoint (BF16 weights and norms, tied
 * embeddings) as safetensors, and its conversion written here the way llama.cpp's converter
 * writes it (llama.cpp names, ne reversed, query/key rows permuted, norms widened to F32, the
 * output stored, a generated rope_freqs.weight) with the project's GGUF writer. The permutation
 * and the widening are this file's own code, from the converter's definition. */
#include "st_writer.h"
#include "tensormap.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { EMBD = 8, N_HEAD = 2, N_HEAD_KV = 1, HD = EMBD / N_HEAD, FF = 16, VOCAB = 10, LAYERS = 2 };

/* One HF tensor: name, PyTorch shape, and (for llama's q/k) how many heads were permuted. */
typedef struct spec {
    char hf[96], gguf[96];
    uint64_t rows, cols;      /* cols 0: a 1-d tensor of rows values */
    int heads;                /* 0: not permuted */
    int is_norm;
} spec;

static spec specs[64];
static int n_specs;

static void add_spec(const char *hf, const char *gguf, uint64_t rows, uint64_t cols, int heads,
                     int is_norm)
{
    spec *s = &specs[n_specs++];
    snprintf(s->hf, sizeof s->hf, "%s", hf);
    snprintf(s->gguf, sizeof s->gguf, "%s", gguf);
    s->rows = rows;
    s->cols = cols;
    s->heads = heads;
    s->is_norm = is_norm;
}

static void make_specs(void)
{
    n_specs = 0;
    add_spec("model.embed_tokens.weight", "token_embd.weight", VOCAB, EMBD, 0, 0);
    for (int l = 0; l < LAYERS; l++) {
        char hf[96], gg[96];
#define LAYER(hfpart, ggpart, rows, cols, heads, norm)                                 \
        snprintf(hf, sizeof hf, "model.layers.%d.%s", l, hfpart);                       \
        snprintf(gg, sizeof gg, "blk.%d.%s", l, ggpart);                                \
        add_spec(hf, gg, rows, cols, heads, norm);
        LAYER("self_attn.q_proj.weight", "attn_q.weight", EMBD, EMBD, N_HEAD, 0)
        LAYER("self_attn.k_proj.weight", "attn_k.weight", N_HEAD_KV * HD, EMBD, N_HEAD_KV, 0)
        LAYER("self_attn.v_proj.weight", "attn_v.weight", N_HEAD_KV * HD, EMBD, 0, 0)
        LAYER("self_attn.o_proj.weight", "attn_output.weight", EMBD, EMBD, 0, 0)
        LAYER("mlp.gate_proj.weight", "ffn_gate.weight", FF, EMBD, 0, 0)
        LAYER("mlp.up_proj.weight", "ffn_up.weight", FF, EMBD, 0, 0)
        LAYER("mlp.down_proj.weight", "ffn_down.weight", EMBD, FF, 0, 0)
        LAYER("input_layernorm.weight", "attn_norm.weight", EMBD, 0, 0, 1)
        LAYER("post_attention_layernorm.weight", "ffn_norm.weight", EMBD, 0, 0, 1)
#undef LAYER
    }
    add_spec("model.norm.weight", "output_norm.weight", EMBD, 0, 0, 1);
}

/* Deterministic BF16 values in (-2, 2): the top half of a float's bits. */
static uint32_t rng = 12345;
static uint16_t next_bf16(void)
{
    rng = rng * 1664525u + 1013904223u;
    float v = ((float)(rng >> 8) / 16777216.0f) * 4.0f - 2.0f;
    uint32_t bits;
    memcpy(&bits, &v, 4);
    return (uint16_t)(bits >> 16);
}

/* convert_hf_to_gguf.py permute(): w.reshape(n_head, 2, rows/n_head/2, cols).swapaxes(1, 2)
 * .reshape(rows, cols): out[h][i][j] = in[h][j][i] over (head, half, pair) row coordinates. */
static void permute_rows(const uint16_t *in, uint16_t *out, uint64_t rows, uint64_t cols, int n_head)
{
    uint64_t half = rows / (uint64_t)n_head / 2;
    for (uint64_t h = 0; h < (uint64_t)n_head; h++)
        for (uint64_t i = 0; i < half; i++)
            for (uint64_t j = 0; j < 2; j++) {
                uint64_t out_row = (h * half + i) * 2 + j, in_row = (h * 2 + j) * half + i;
                memcpy(out + out_row * cols, in + in_row * cols, cols * sizeof *in);
            }
}

static char dir[64], st_path[128], gguf_path[128];

static void setup(void)
{
    strcpy(dir, "/tmp/tm_cmp_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(st_path, sizeof st_path, "%s/model.safetensors", dir);
    snprintf(gguf_path, sizeof gguf_path, "%s/model.gguf", dir);
    make_specs();
}

static void teardown(void)
{
    unlink(st_path);
    unlink(gguf_path);
    rmdir(dir);
}

/* What to do differently from a faithful conversion. */
typedef struct variant {
    const char *arch;          /* "llama" unless set */
    const char *poke;          /* GGUF tensor whose element poke_at is one bf16 ulp off */
    uint64_t poke_at;
    int drop_output;           /* the GGUF leaves out output.weight (tied) */
    int inv_freq;              /* the checkpoint has a rotary_emb.inv_freq (the converter drops it) */
    int lm_head;               /* the checkpoint stores lm_head.weight (= the embedding) */
    int no_heads;              /* the GGUF does not say its head counts */
    const char *transpose;     /* GGUF tensor written with its two dimensions swapped */
} variant;

static void write_pair(const variant *v)
{
    rng = 12345;
    st_writer *sw = st_writer_new();
    st_writer_meta(sw, "format", "pt");
    tm_writer *gw = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_writer_new(&gw, &err), TM_OK, "%s", err.message);
    const char *arch = v->arch ? v->arch : "llama";
    char key[64];
    uint32_t u;
    cr_assert_eq(tm_writer_kv_str(gw, "general.architecture", arch, strlen(arch), &err), TM_OK);
    if (!v->no_heads) {
        snprintf(key, sizeof key, "%s.attention.head_count", arch);
        u = N_HEAD;
        cr_assert_eq(tm_writer_kv_scalar(gw, key, TM_V_U32, &u, &err), TM_OK);
        snprintf(key, sizeof key, "%s.attention.head_count_kv", arch);
        u = N_HEAD_KV;
        cr_assert_eq(tm_writer_kv_scalar(gw, key, TM_V_U32, &u, &err), TM_OK);
    }

    /* buffers stay alive until tm_writer_finish (the writer references them) */
    void *keep[128];
    int n_keep = 0;
    for (int i = 0; i < n_specs; i++) {
        const spec *s = &specs[i];
        uint64_t n = s->rows * (s->cols ? s->cols : 1);
        uint16_t *hf = malloc(n * 2), *conv = malloc(n * 2);
        for (uint64_t k = 0; k < n; k++)
            hf[k] = next_bf16();
        uint64_t shape[2] = {s->rows, s->cols};
        st_writer_add(sw, s->hf, "BF16", s->cols ? 2 : 1, shape, hf, n * 2);
        if (s->heads)
            permute_rows(hf, conv, s->rows, s->cols, s->heads);
        else
            memcpy(conv, hf, n * 2);
        uint64_t ne[2] = {s->cols ? s->cols : s->rows, s->rows};
        if (v->transpose && strcmp(v->transpose, s->gguf) == 0) {
            ne[0] = s->rows;
            ne[1] = s->cols;
        }
        void *data = conv;
        tm_type type = TM_TYPE_BF16;
        if (s->is_norm) { /* the converter stores norms as F32: BF16 widened exactly */
            uint32_t *f = malloc(n * 4);
            for (uint64_t k = 0; k < n; k++)
                f[k] = (uint32_t)conv[k] << 16;
            data = f;
            type = TM_TYPE_F32;
            keep[n_keep++] = f;
        }
        if (v->poke && strcmp(v->poke, s->gguf) == 0) {
            cr_assert(!s->is_norm);
            conv[v->poke_at] ^= 0x0001; /* one ulp of bf16 */
        }
        cr_assert_eq(tm_writer_tensor(gw, s->gguf, type, s->cols ? 2 : 1, ne, data, &err), TM_OK,
                     "%s", err.message);
        if (strcmp(s->gguf, "token_embd.weight") == 0 && !v->drop_output)
            cr_assert_eq(tm_writer_tensor(gw, "output.weight", type, 2, ne, data, &err), TM_OK);
        if (strcmp(s->gguf, "token_embd.weight") == 0 && v->lm_head)
            st_writer_add(sw, "lm_head.weight", "BF16", 2, shape, hf, n * 2);
        keep[n_keep++] = hf;
        keep[n_keep++] = conv;
    }
    static const float rope[HD / 2] = {1.0f, 0.5f};
    if (v->inv_freq) {
        const uint64_t s1[1] = {HD / 2};
        st_writer_add(sw, "model.layers.0.self_attn.rotary_emb.inv_freq", "F32", 1, s1, rope,
                      sizeof rope);
    }
    const uint64_t rope_ne[1] = {HD / 2};
    cr_assert_eq(tm_writer_tensor(gw, "rope_freqs.weight", TM_TYPE_F32, 1, rope_ne, rope, &err), TM_OK);
    cr_assert_eq(tm_writer_finish(gw, gguf_path, &err), TM_OK, "%s", err.message);
    cr_assert_eq(st_writer_write(sw, st_path), 0);
    st_writer_free(sw);
    for (int i = 0; i < n_keep; i++)
        free(keep[i]);
}

/* Run the tool; its stdout into out (NUL-terminated); returns the exit status. */
static int run_tool(const char *args, char *out, size_t cap)
{
    const char *tool = getenv("TM_TOOL");
    cr_assert_not_null(tool, "TM_TOOL is not set (run the tests through make)");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s", tool, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    cr_assert(WIFEXITED(st), "%s did not exit", cmd);
    return WEXITSTATUS(st);
}

/* extra: options of compare; global: options of tensormap before the command */
static json_t *run_json_in(const char *global, const char *a, const char *b, const char *extra,
                           int *rc)
{
    static char out[1 << 20];
    char args[512];
    snprintf(args, sizeof args, "%s compare --json %s %s %s", global, extra, a, b);
    *rc = run_tool(args, out, sizeof out);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    cr_assert_not_null(j, "not JSON (%s): %s", je.text, out);
    return j;
}

static json_t *run_json(const char *a, const char *b, const char *extra, int *rc)
{
    return run_json_in("", a, b, extra, rc);
}

static uint64_t summary(json_t *j, const char *key)
{
    json_t *v = json_object_get(json_object_get(j, "summary"), key);
    cr_assert(json_is_integer(v), "summary.%s missing", key);
    return (uint64_t)json_integer_value(v);
}

/* pairs: one per HF tensor plus the GGUF's output tied to the embedding */
#define N_PAIRS (1 + LAYERS * 9 + 1 + 1)

Test(compare, faithful_conversion_matches, .init = setup, .fini = teardown)
{
    write_pair(&(variant){0});
    static char out[1 << 16];
    char args[512];
    snprintf(args, sizeof args, "compare %s %s", st_path, gguf_path);
    int rc = run_tool(args, out, sizeof out);
    cr_expect_eq(rc, 0, "%s", out);
    const char *line = strstr(out, "exact matches");
    int got = -1, of = -1;
    cr_assert_not_null(line, "%s", out);
    cr_expect_eq(sscanf(line + strlen("exact matches"), " %d / %d", &got, &of), 2, "%s", line);
    cr_expect(got == N_PAIRS && of == N_PAIRS, "%d / %d exact", got, of);
    cr_expect(strstr(out, "only in B: rope_freqs.weight"), "%s", out);
    cr_expect(strstr(out, "rows un-permuted"), "%s", out);

    json_t *j = run_json(st_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), N_PAIRS);
    cr_expect_eq(summary(j, "differing"), 0);
    cr_expect_eq(summary(j, "only_a"), 0);
    cr_expect_eq(summary(j, "only_b"), 1);
    cr_expect_eq(summary(j, "rows_unpermuted"), 2 * LAYERS);
    json_t *only_b = json_array_get(json_object_get(j, "only_b"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(only_b, "name")), "rope_freqs.weight");
    json_decref(j);
}

Test(compare, either_order, .init = setup, .fini = teardown)
{
    write_pair(&(variant){0});
    int rc;
    json_t *j = run_json(gguf_path, st_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), N_PAIRS);
    cr_expect_eq(summary(j, "only_a"), 1, "rope_freqs.weight is now on side A");
    json_decref(j);
}

Test(compare, tied_output_absent_from_gguf, .init = setup, .fini = teardown)
{
    write_pair(&(variant){.drop_output = 1});
    int rc;
    json_t *j = run_json(st_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), N_PAIRS - 1);
    json_decref(j);
}

/* One planted difference: exactly one value of one tensor, in a permuted one (so the index
 * arithmetic of the un-permutation is checked too). */
Test(compare, one_changed_value_is_found, .init = setup, .fini = teardown)
{
    write_pair(&(variant){.poke = "blk.1.attn_k.weight", .poke_at = 13});
    int rc;
    json_t *j = run_json(st_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 1);
    cr_expect_eq(summary(j, "differing"), 1);
    cr_expect_eq(summary(j, "exact"), N_PAIRS - 1);
    size_t i;
    json_t *p;
    int seen = 0;
    json_array_foreach(json_object_get(j, "pairs"), i, p) {
        if (strcmp(json_string_value(json_object_get(p, "status")), "differs") != 0)
            continue;
        seen++;
        cr_expect_str_eq(json_string_value(json_object_get(p, "b")), "blk.1.attn_k.weight");
        cr_expect_eq(json_integer_value(json_object_get(p, "n_differing")), 1);
        /* element 13 of the converted [4, 8] is row 1, column 5; the converter took row 1 of a
         * 4-row head from source row 2 (it stores source rows 0 2 1 3): source element 21 */
        cr_expect_eq(json_integer_value(json_object_get(p, "first_differing_b")), 13);
        cr_expect_eq(json_integer_value(json_object_get(p, "first_differing_a")), 21);
        cr_expect(json_real_value(json_object_get(p, "max_abs")) > 0);
    }
    cr_expect_eq(seen, 1);
    json_decref(j);

    static char out[1 << 16];
    char args[512];
    snprintf(args, sizeof args, "compare %s %s", st_path, gguf_path);
    cr_expect_eq(run_tool(args, out, sizeof out), 1);
    cr_expect(strstr(out, "DIFFERS  model.layers.1.self_attn.k_proj.weight = blk.1.attn_k.weight"),
              "%s", out);
    cr_expect(strstr(out, "1 of 32 values differ"), "%s", out);
    cr_expect(strstr(out, "first at A[2, 5] = B[1, 5]"), "%s", out);
    cr_expect(strstr(out, "MISMATCH"), "%s", out);
}

Test(compare, tolerance_accepts_a_small_difference, .init = setup, .fini = teardown)
{
    write_pair(&(variant){.poke = "blk.0.ffn_up.weight", .poke_at = 5});
    int rc;
    json_t *j = run_json(st_path, gguf_path, "--tolerance 0.05", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "within_tolerance"), 1);
    cr_expect_eq(summary(j, "differing"), 0);
    json_decref(j);
    j = run_json(st_path, gguf_path, "--tolerance 1e-9", &rc);
    cr_expect_eq(rc, 1);
    json_decref(j);
}

/* Without the llama permutation (qwen2 is converted without it), the permuted rows differ:
 * the un-permutation is what makes the faithful conversion match. */
Test(compare, permutation_is_needed, .init = setup, .fini = teardown)
{
    write_pair(&(variant){.arch = "qwen2"});
    int rc;
    json_t *j = run_json(st_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 1);
    cr_expect_eq(summary(j, "differing"), 2 * LAYERS, "attn_q and attn_k of each layer");
    cr_expect_eq(summary(j, "exact"), N_PAIRS - 2 * LAYERS);
    json_decref(j);
}

Test(compare, same_format_by_name, .init = setup, .fini = teardown)
{
    write_pair(&(variant){0});
    int rc;
    json_t *j = run_json(st_path, st_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), (uint64_t)n_specs);
    cr_expect_eq(json_is_true(json_object_get(json_object_get(j, "summary"), "names_mapped")), 0);
    json_decref(j);
    j = run_json(gguf_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), (uint64_t)n_specs + 2);
    json_decref(j);
}

Test(compare, usage_errors, .init = setup, .fini = teardown)
{
    static char out[4096];
    cr_expect_eq(run_tool("compare only_one_file 2>/dev/null", out, sizeof out), 2);
    cr_expect_eq(run_tool("compare --tolerance -1 a b 2>/dev/null", out, sizeof out), 2);
    cr_expect_eq(run_tool("compare /nonexistent/a /nonexistent/b 2>/dev/null", out, sizeof out), 1);
}

/* A quantized target: q8_0 blocks built by hand (half d, then 32 int8), so the decoded values
 * are known: qs[i] * d. The source holds the same values in F32, one of them off by 0.25. */
Test(compare, quantized_target_reports_rmse, .init = setup, .fini = teardown)
{
    uint8_t block[34];
    const uint16_t d = 0x3800; /* 0.5 in IEEE half */
    memcpy(block, &d, 2);
    float src[32];
    for (int i = 0; i < 32; i++) {
        block[2 + i] = (uint8_t)(int8_t)(i - 16);
        src[i] = (float)(i - 16) * 0.5f; /* -8 .. 7.5: range 15.5 */
    }
    src[3] += 0.25f;
    const uint64_t shape[1] = {32};
    st_writer *sw = st_writer_new();
    st_writer_add(sw, "model.norm.weight", "F32", 1, shape, src, sizeof src);
    cr_assert_eq(st_writer_write(sw, st_path), 0);
    st_writer_free(sw);
    tm_writer *gw = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_writer_new(&gw, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(gw, "general.architecture", "qwen2", 5, &err), TM_OK);
    cr_assert_eq(tm_writer_tensor(gw, "output_norm.weight", TM_TYPE_Q8_0, 1, shape, block, &err),
                 TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_finish(gw, gguf_path, &err), TM_OK, "%s", err.message);

    int rc;
    json_t *j = run_json(st_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 1);
    json_t *p = json_array_get(json_object_get(j, "pairs"), 0);
    cr_assert_not_null(p);
    cr_expect_str_eq(json_string_value(json_object_get(p, "type_b")), "q8_0");
    cr_expect_eq(json_integer_value(json_object_get(p, "n_differing")), 1);
    cr_expect_float_eq(json_real_value(json_object_get(p, "max_abs")), 0.25, 1e-12);
    cr_expect_float_eq(json_real_value(json_object_get(p, "rmse")), sqrt(0.25 * 0.25 / 32), 1e-12);
    /* the range is A's (the source's): -8 .. 7.5 */
    cr_expect_float_eq(json_real_value(json_object_get(p, "max_error_of_range")), 0.25 / 15.5, 1e-12);
    json_decref(j);
    j = run_json(st_path, gguf_path, "--tolerance 0.25", &rc);
    cr_expect_eq(rc, 0);
    json_decref(j);
}

/* The same checkpoint split into two shards with an index: it compares by name with the single
 * file, through the index or through one shard with --all-shards. */
Test(compare, sharded_checkpoint, .init = setup, .fini = teardown)
{
    write_pair(&(variant){0});
    char shard[2][160], index[160], sub[100];
    snprintf(sub, sizeof sub, "%s/sharded", dir); /* --all-shards applies to both files */
    cr_assert_eq(mkdir(sub, 0700), 0);
    st_writer *w[2] = {st_writer_new(), st_writer_new()};
    json_t *map = json_object();
    rng = 12345; /* the values write_pair drew, in the same order */
    for (int i = 0; i < n_specs; i++) {
        const spec *s = &specs[i];
        uint64_t n = s->rows * (s->cols ? s->cols : 1), shape[2] = {s->rows, s->cols};
        uint16_t v[256];
        for (uint64_t k = 0; k < n; k++)
            v[k] = next_bf16();
        int which = i >= n_specs / 2;
        st_writer_add(w[which], s->hf, "BF16", s->cols ? 2 : 1, shape, v, n * 2);
        json_object_set_new(map, s->hf, json_sprintf("part-%d.safetensors", which + 1));
    }
    for (int k = 0; k < 2; k++) {
        snprintf(shard[k], sizeof shard[k], "%s/part-%d.safetensors", sub, k + 1);
        cr_assert_eq(st_writer_write(w[k], shard[k]), 0);
        st_writer_free(w[k]);
    }
    json_t *idx = json_pack("{s:{}, s:o}", "metadata", "weight_map", map);
    char *body = json_dumps(idx, JSON_INDENT(2));
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", sub);
    cr_assert_eq(st_write_file(index, body, strlen(body)), 0);
    free(body);
    json_decref(idx);

    int rc;
    json_t *j = run_json(index, st_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), (uint64_t)n_specs);
    json_decref(j);
    j = run_json_in("--all-shards", shard[1], st_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), (uint64_t)n_specs);
    json_decref(j);
    j = run_json(shard[1], st_path, "", &rc);
    cr_expect_eq(rc, 1, "one shard alone leaves tensors of B unaccounted for");
    cr_expect_eq(summary(j, "only_b"), (uint64_t)(n_specs / 2));
    json_decref(j);
    /* the faithful GGUF against the sharded source */
    j = run_json(index, gguf_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), N_PAIRS);
    json_decref(j);
    unlink(shard[0]);
    unlink(shard[1]);
    unlink(index);
    rmdir(sub);
}

/* Every dtype against a copy whose first byte of each tensor is one bit off (3 -> 2): every
 * value changes except BOOL's (non-zero stays true). f64 and the 32- and 64-bit integers
 * would lose that bit in float32, so they must be compared as bytes to be caught. */
Test(compare, every_dtype_one_bit_off, .init = setup, .fini = teardown)
{
    static const struct {
        const char *name;
        size_t size;
        bool as_bytes, differs;
    } dt[] = {
        {"F64", 8, true, true},      {"F32", 4, false, true},     {"F16", 2, false, true},
        {"BF16", 2, false, true},    {"I64", 8, true, true},      {"I32", 4, true, true},
        {"I16", 2, false, true},     {"I8", 1, false, true},      {"U8", 1, false, true},
        {"BOOL", 1, false, false},   {"F8_E4M3", 1, false, true}, {"F8_E5M2", 1, false, true},
        {"U16", 2, false, true},     {"U32", 4, true, true},      {"U64", 8, true, true},
    };
    const size_t n = sizeof dt / sizeof dt[0];
    uint8_t bytes[6 * 8];
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] = (uint8_t)((i * 5 + 3) & 0x3f);
    const uint64_t shape[2] = {2, 3};
    char other[160];
    snprintf(other, sizeof other, "%s/other.safetensors", dir);
    for (int copy = 0; copy < 2; copy++) {
        st_writer *w = st_writer_new();
        for (size_t i = 0; i < n; i++)
            st_writer_add(w, dt[i].name, dt[i].name, 2, shape, bytes, 6 * dt[i].size);
        cr_assert_eq(st_writer_write(w, copy ? other : st_path), 0);
        st_writer_free(w);
        bytes[0] ^= 1;
    }
    int rc;
    json_t *j = run_json(st_path, other, "", &rc);
    cr_expect_eq(rc, 1);
    cr_expect_eq(summary(j, "differing"), n - 1);
    cr_expect_eq(summary(j, "exact"), 1);
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(j, "pairs"), i, p) {
        cr_assert_lt(i, n);
        cr_expect_str_eq(json_string_value(json_object_get(p, "status")),
                         dt[i].differs ? "differs" : "exact", "%s", dt[i].name);
        cr_expect_eq(json_is_true(json_object_get(p, "compared_as_bytes")), dt[i].as_bytes, "%s",
                     dt[i].name);
        if (dt[i].differs)
            cr_expect_eq(json_integer_value(json_object_get(p, "first_differing_a")), 0);
    }
    json_decref(j);
    unlink(other);
}

/* ggml's own golden file against itself: every one of its 58 tensors, of every type, whether
 * or not this library decodes it, is an exact match. */
Test(compare, golden_file_against_itself)
{
    const char *corpus = getenv("TM_CORPUS");
    cr_assert_not_null(corpus, "TM_CORPUS is not set (run the tests through make)");
    char path[512];
    snprintf(path, sizeof path, "%s/golden/golden-a.gguf", corpus);
    int rc;
    json_t *j = run_json(path, path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), 58);
    cr_expect_eq(summary(j, "pairs"), 58);
    json_decref(j);
}

Test(compare, tensors_the_converter_drops_do_not_fail, .init = setup, .fini = teardown)
{
    write_pair(&(variant){.inv_freq = 1});
    int rc;
    json_t *j = run_json(st_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "only_a"), 0);
    json_t *o = json_array_get(json_object_get(j, "only_a"), 0);
    cr_assert_not_null(o, "the dropped tensor is still listed");
    cr_expect_str_eq(json_string_value(json_object_get(o, "name")),
                     "model.layers.0.self_attn.rotary_emb.inv_freq");
    cr_expect(json_is_true(json_object_get(o, "dropped_by_converter")));
    json_decref(j);
}

/* The checkpoint stores lm_head, the GGUF ties it to token_embd: they are compared. */
Test(compare, lm_head_tied_in_gguf, .init = setup, .fini = teardown)
{
    write_pair(&(variant){.lm_head = 1, .drop_output = 1});
    int rc;
    json_t *j = run_json(st_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 0);
    cr_expect_eq(summary(j, "exact"), N_PAIRS);
    cr_expect_eq(summary(j, "only_a"), 0);
    json_decref(j);
}

Test(compare, shape_mismatch, .init = setup, .fini = teardown)
{
    write_pair(&(variant){.transpose = "blk.0.ffn_up.weight"});
    int rc;
    json_t *j = run_json(st_path, gguf_path, "", &rc);
    cr_expect_eq(rc, 1);
    cr_expect_eq(summary(j, "shape_mismatch"), 1);
    cr_expect_eq(summary(j, "exact"), N_PAIRS - 1);
    json_decref(j);
}

Test(compare, llama_without_head_counts, .init = setup, .fini = teardown)
{
    write_pair(&(variant){.no_heads = 1});
    static char out[4096];
    char args[512];
    snprintf(args, sizeof args, "compare %s %s 2>&1", st_path, gguf_path);
    cr_expect_eq(run_tool(args, out, sizeof out), 1);
    cr_expect(strstr(out, "llama.attention.head_count is missing"), "%s", out);
}

/* A value float32 cannot hold, against the float32 it rounds to, is a difference: compare works
 * in the wider type (I64 16777217 is not F32 16777216; F64 1e300 is not F32 infinity), and
 * values both types hold exactly still match. */
Test(compare, the_wider_type_decides, .init = setup, .fini = teardown)
{
    static const struct {
        const char *name, *wide_type;
        size_t wide_size;
        int64_t i;
        double d;
        float f;
        bool differs;
    } c[] = {
        {"i64_2p24_plus_1", "I64", 8, 16777217, 0, 16777216.0f, true},
        {"i64_2p24", "I64", 8, 16777216, 0, 16777216.0f, false},
        {"i64_minus_5", "I64", 8, -5, 0, -5.0f, false},
        {"f64_1e300", "F64", 8, 0, 1e300, INFINITY, true},
        {"f64_tenth", "F64", 8, 0, 0.1, 0.1f, true},
        {"f64_half", "F64", 8, 0, 0.5, 0.5f, false},
        {"i32_2p24_plus_1", "I32", 4, 16777217, 0, 16777216.0f, true},
    };
    const size_t n = sizeof c / sizeof c[0];
    const uint64_t shape[1] = {1};
    char other[160];
    snprintf(other, sizeof other, "%s/other.safetensors", dir);
    st_writer *wa = st_writer_new(), *wb = st_writer_new();
    for (size_t k = 0; k < n; k++) {
        uint8_t v[8];
        if (c[k].wide_type[0] == 'F')
            memcpy(v, &c[k].d, 8);
        else if (c[k].wide_size == 8)
            memcpy(v, &c[k].i, 8);
        else {
            int32_t i32 = (int32_t)c[k].i;
            memcpy(v, &i32, 4);
        }
        st_writer_add(wa, c[k].name, c[k].wide_type, 1, shape, v, c[k].wide_size);
        st_writer_add(wb, c[k].name, "F32", 1, shape, &c[k].f, 4);
    }
    cr_assert_eq(st_writer_write(wa, st_path), 0);
    cr_assert_eq(st_writer_write(wb, other), 0);
    st_writer_free(wa);
    st_writer_free(wb);
    for (int order = 0; order < 2; order++) {
        int rc;
        json_t *j = order ? run_json(other, st_path, "", &rc) : run_json(st_path, other, "", &rc);
        cr_expect_eq(rc, 1);
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(j, "pairs"), i, p) {
            const char *name = json_string_value(json_object_get(p, "a"));
            cr_assert_not_null(name);
            for (size_t k = 0; k < n; k++)
                if (strcmp(name, c[k].name) == 0)
                    cr_expect_str_eq(json_string_value(json_object_get(p, "status")),
                                     c[k].differs ? "differs" : "exact", "%s (%s first)", name,
                                     order ? "F32" : c[k].wide_type);
        }
        cr_expect_eq(json_array_size(json_object_get(j, "pairs")), n);
        json_decref(j);
    }
    unlink(other);
}
