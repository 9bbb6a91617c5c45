/* The walk both fuzz harnesses share. Every check here is an invariant the public header
 * promises; a broken one aborts, which libFuzzer records as a crash with its input. */
#include "walk.h"

#include "tensormap.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_BLOCK_FLOATS 256

static const uint8_t *g_lo, *g_hi; /* the input buffer: everything must point into it */
static int g_gguf;                  /* GGUF names and values are read in place; safetensors'
                                     * come out of the JSON parser's memory */

static void fail(const char *what)
{
    fprintf(stderr, "fuzz invariant broken: %s\n", what);
    abort();
}

/* [p, p + n) lies inside the input (the library may also hand out memory it owns, but for a
 * buffer-backed GGUF or safetensors file every name, value and tensor byte is in the input). */
static void inside(const void *p, uint64_t n, const char *what)
{
    const uint8_t *q = p;
    if (n == 0)
        return;
    if (!q || q < g_lo || q > g_hi || n > (uint64_t)(g_hi - q))
        fail(what);
}

static void walk_kv(const tm_file *f, const tm_kv *kv)
{
    tm_value v;
    if (g_gguf) {
        inside(kv->key.ptr, kv->key.len, "kv key outside the input");
        inside(kv->data, kv->data_bytes, "kv value outside the input");
    }
    if (tm_kv_findn(f, kv->key.ptr, (size_t)kv->key.len) != kv)
        fail("tm_kv_findn does not find the entry by its own key");
    if (kv->type != TM_V_ARRAY) {
        if (tm_kv_value(kv, &v) != TM_OK)
            fail("tm_kv_value refuses a scalar the file opened with");
        if (g_gguf && v.type == TM_V_STRING)
            inside(v.as.s.ptr, v.as.s.len, "string value outside the input");
        return;
    }
    if (kv->elem_type == TM_V_STRING) {
        tm_str_iter it;
        tm_str s;
        uint64_t n = 0;
        if (tm_kv_strings(kv, &it) != TM_OK)
            fail("tm_kv_strings refuses a string array");
        while (tm_str_next(&it, &s)) {
            if (g_gguf)
                inside(s.ptr, s.len, "string array element outside the input");
            n++;
        }
        if (n != kv->count)
            fail("tm_str_next yields a different number of strings than the count");
        return;
    }
    for (uint64_t i = 0; i < kv->count; i++)
        if (tm_kv_elem(kv, i, &v) != TM_OK)
            fail("tm_kv_elem refuses an element below the count");
    if (tm_kv_elem(kv, kv->count, &v) == TM_OK)
        fail("tm_kv_elem accepts the index count");
}

/* Equal bits, or both NaN: the kernels of every instruction set must agree bit for bit, but
 * which operand's payload a NaN result carries is not specified. */
static bool same_float(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b);
}

static void walk_tensor(const tm_file *f, const tm_tensor *t)
{
    float first[FUZZ_BLOCK_FLOATS], out[FUZZ_BLOCK_FLOATS];
    tm_error err;
    uint32_t be = tm_type_block_elems(t->type);

    if (g_gguf)
        inside(t->name.ptr, t->name.len, "tensor name outside the input");
    inside(t->data, t->n_bytes, "tensor data outside the input");
    if (tm_tensor_findn(f, t->name.ptr, (size_t)t->name.len) != t)
        fail("tm_tensor_findn does not find the tensor by its own name");
    if (!tm_type_can_dequant(t->type) || be == 0 || be > FUZZ_BLOCK_FLOATS ||
        t->n_elements < be)
        return;
    /* The first block on every path this machine has, each compared with the scalar one: a
     * differential test of the kernels on block bytes no test suite would think of. */
    for (unsigned k = 0; tm_isa_built(k); k++) {
        if (!tm_isa_available(tm_isa_built(k)) || tm_set_isa(tm_isa_built(k), &err) != TM_OK)
            continue;
        float *dst = k == 0 ? first : out;
        if (tm_dequant_blocks(t, 0, 1, dst, &err) != TM_OK)
            fail("tm_dequant_blocks refuses the first block of a decodable tensor");
        for (uint32_t i = 0; k > 0 && i < be; i++)
            if (!same_float(first[i], out[i])) {
                fprintf(stderr, "%s element %u: scalar %a, %s %a\n", tm_type_name(t->type), i,
                        (double)first[i], tm_isa_built(k), (double)out[i]);
                fail("an instruction-set path decodes differently from the scalar one");
            }
    }
}

void fuzz_walk(const uint8_t *data, size_t size)
{
    tm_file *f = NULL;
    tm_error err;

    g_lo = data;
    g_hi = data + size;
    memset(&err, 0, sizeof err);
    tm_status st = tm_open_buffer(data, size, 0, &f, &err);
    if (st != TM_OK) {
        if (f || err.code != st || err.message[0] == '\0' ||
            !memchr(err.message, '\0', sizeof err.message))
            fail("a refusal without its code, its message, or with a file");
        return;
    }
    const tm_layout *l = tm_file_layout(f);
    if (l->file_size != size || l->data_start > size || l->tensors_end > l->data_size)
        fail("the layout does not fit the input");
    g_gguf = l->format == TM_FORMAT_GGUF;
    for (uint64_t i = 0; i < tm_n_kv(f); i++)
        walk_kv(f, tm_kv_at(f, i));
    for (uint64_t i = 0; i < tm_n_tensors(f); i++)
        walk_tensor(f, tm_tensor_at(f, i));
    if (tm_kv_at(f, tm_n_kv(f)) || tm_tensor_at(f, tm_n_tensors(f)))
        fail("an index past the count returns an entry");
    tm_close(f);
}
