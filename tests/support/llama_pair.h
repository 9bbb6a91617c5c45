/* A tiny llama-shaped checkpoint (BF16 weights and norms) as safetensors, and its conversion
 * written the way llama.cpp's converter writes it (llama.cpp names, ne reversed, query/key rows
 * permuted, norms widened to F32, the output stored, a generated rope_freqs.weight) with the
 * project's GGUF writer. The permutation and the widening are this file's own code, from the
 * converter's definition. compare audits the pair; export turns the GGUF back. */
#ifndef TM_TESTS_LLAMA_PAIR_H
#define TM_TESTS_LLAMA_PAIR_H

#include <stdint.h>

enum { EMBD = 8, N_HEAD = 2, N_HEAD_KV = 1, HD = EMBD / N_HEAD, FF = 16, VOCAB = 10, LAYERS = 2 };

/* One HF tensor: name, PyTorch shape, and (for llama's q/k) how many heads were permuted. */
typedef struct spec {
    char hf[96], gguf[96];
    uint64_t rows, cols;      /* cols 0: a 1-d tensor of rows values */
    int heads;                /* 0: not permuted */
    int is_norm;
} spec;

extern spec specs[64];
extern int n_specs;
/* The test's directory and the two files in it (set by setup). */
extern char dir[64], st_path[128], gguf_path[128];

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

/* Criterion .init / .fini: a fresh directory and the specs; remove the two files and it. */
void pair_setup(void);
void pair_teardown(void);
/* Deterministic BF16 values in (-2, 2), from the start again after pair_rng_reset (write_pair
 * resets first). */
uint16_t next_bf16(void);
void pair_rng_reset(void);
/* Write st_path and gguf_path. */
void write_pair(const variant *v);

#endif
