/* mkdemo: write the demo model the README's first command inspects: a small qwen2-shaped GGUF
 * (8 blocks, 256 wide, a 1024-token vocabulary; about 4.5 MB) with tensors of f32, f16, q8_0,
 * q5_0, q4_K and q6_K, mixed across blocks as llama.cpp's q4_K_M mixes them. The weights are
 * not a trained model: f32/f16 tensors hold smooth curves, quantized blocks hold pseudo-random
 * bytes with moderate, finite scales so that they decode to values of a weight's size. Fixed
 * seed: the same file on every build. */
#include "qwen2_model.h"

#include <math.h>

/* The half-precision scales of one block type: offsets of d (and dmin) and their typical
 * values, chosen so decoded values stay within about +-0.1 (FORMATS.md gives the layouts). */
static const struct scale_layout {
    tm_type type;
    int d_at, dmin_at; /* byte offsets in the block; dmin_at < 0: no dmin */
    float d, dmin;
} scales[] = {
    {TM_TYPE_Q8_0, 0, -1, 0.05f / 127, 0},   /* d * q, q in -128..127 */
    {TM_TYPE_Q5_0, 0, -1, 0.05f / 16, 0},    /* d * (q - 16), q in 0..31 */
    {TM_TYPE_Q4_K, 0, 2, 1e-4f, 7e-4f},      /* d*sc*q - dmin*m, sc, m in 0..63, q in 0..15 */
    {TM_TYPE_Q6_K, 208, -1, 1e-4f, 0},       /* d * scale * (q - 32), scales set to -16..16 */
};

/* float -> IEEE half, round to nearest even, for the normal range only: every value written
 * here is between 6.1e-5 and 65504 in magnitude, or zero. */
static uint16_t half_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
    const int32_t e = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    if (e <= 0)
        return (uint16_t)sign;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    uint32_t h = sign | (uint32_t)e << 10 | mant >> 13;
    const uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++; /* a carry into the exponent is still the right rounding */
    return (uint16_t)h;
}

static void put_half(uint8_t *p, float f)
{
    const uint16_t h = half_from_float(f);
    p[0] = (uint8_t)h, p[1] = (uint8_t)(h >> 8); /* little-endian on every host */
}

typedef struct demo {
    uint64_t rng;
    void **bufs; /* kept until the writer has written them */
    size_t n_bufs;
    bool failed;
} demo;

/* A smooth curve per tensor: a slow wave across rows and a faster one along them. */
static float smooth(qwen2_kind kind, uint64_t i, double phase)
{
    const double x = (double)i;
    switch (kind) {
    case QWEN2_NORM:
        return (float)(1.0 + 0.1 * sin(0.37 * x + phase));
    case QWEN2_BIAS:
        return (float)(0.02 * sin(0.11 * x + phase));
    case QWEN2_WEIGHT:
    default:
        return (float)(0.05 * sin(0.05 * x + phase) * cos(0.0007 * x));
    }
}

static void fill_quant(demo *d, tm_type type, uint8_t *p, uint64_t n_bytes)
{
    for (uint64_t i = 0; i < n_bytes; i += 8) {
        const uint64_t r = qwen2_rand(&d->rng);
        memcpy(p + i, &r, n_bytes - i < 8 ? (size_t)(n_bytes - i) : 8);
    }
    const uint32_t bb = tm_type_block_bytes(type);
    const struct scale_layout *s = scales;
    while (s->type != type)
        s++;
    for (uint64_t b = 0; b < n_bytes / bb; b++) {
        uint8_t *blk = p + b * bb;
        /* each block's scale 0.75x..1.25x the typical one, as real blocks differ */
        const float jitter = 0.75f + (float)(qwen2_rand(&d->rng) % 1000) / 2000.0f;
        put_half(blk + s->d_at, s->d * jitter);
        if (s->dmin_at >= 0)
            put_half(blk + s->dmin_at, s->dmin * jitter);
        if (type == TM_TYPE_Q6_K)
            for (int k = 0; k < 16; k++) /* the int8 sub-block scales, kept small */
                blk[192 + k] = (uint8_t)(int8_t)((int)(qwen2_rand(&d->rng) % 33) - 16);
    }
}

static const void *demo_data(void *ctx, qwen2_kind kind, tm_type type, uint64_t n_elements,
                             uint64_t n_bytes)
{
    demo *d = ctx;
    void **grown = realloc(d->bufs, (d->n_bufs + 1) * sizeof *d->bufs);
    uint8_t *p = grown ? malloc(n_bytes ? (size_t)n_bytes : 1) : NULL;
    if (grown)
        d->bufs = grown;
    if (!p) {
        d->failed = true;
        return NULL;
    }
    d->bufs[d->n_bufs++] = p;
    const double phase = (double)(qwen2_rand(&d->rng) % 628) / 100.0;
    if (type == TM_TYPE_F32) {
        for (uint64_t i = 0; i < n_elements; i++) {
            const float v = smooth(kind, i, phase);
            memcpy(p + 4 * i, &v, 4);
        }
    } else if (type == TM_TYPE_F16) {
        for (uint64_t i = 0; i < n_elements; i++)
            put_half(p + 2 * i, smooth(kind, i, phase));
    } else {
        fill_quant(d, type, p, n_bytes);
    }
    return p;
}

int main(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: mkdemo OUT.gguf\n"
                        "Write the small qwen2-shaped demo model (about 4.5 MB) to OUT.gguf.\n");
        return argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }
    const qwen2_model m = {
        .name = "tensormap demo (qwen2-shaped, not trained)",
        .size_label = "7M", /* 6,824,192 weights */
        .n_block = 8, .n_embd = 256, .n_head = 4, .n_head_kv = 2, .n_ff = 768, .n_ctx = 4096,
        .n_vocab = 1024, .n_merges = 762,
        .file_type = 15,
        .embd = TM_TYPE_F16, .output = TM_TYPE_Q6_K, .attn = TM_TYPE_Q5_0,
        .attn_v = {TM_TYPE_Q5_0, TM_TYPE_Q8_0}, .ffn_gate_up = TM_TYPE_Q4_K,
        .ffn_down = {TM_TYPE_Q4_K, TM_TYPE_Q6_K},
        .seed = 20261130,
    };
    demo d = {.rng = m.seed};
    tm_error err = {0};
    tm_writer *w = NULL;
    tm_status st = tm_writer_new(&w, &err);
    if (st == TM_OK)
        st = qwen2_write_kv(w, &m, &err);
    if (st == TM_OK)
        st = qwen2_write_tensors(w, &m, demo_data, &d, &err);
    if (st == TM_OK && d.failed)
        st = TM_NOMEM, snprintf(err.message, sizeof err.message, "out of memory");
    if (st == TM_OK)
        st = tm_writer_finish(w, argv[1], &err);
    else
        tm_writer_free(w);
    for (size_t i = 0; i < d.n_bufs; i++)
        free(d.bufs[i]);
    free(d.bufs);
    if (st != TM_OK) {
        fprintf(stderr, "mkdemo: %s: %s\n", argv[1], err.message);
        return 1;
    }
    return 0;
}
