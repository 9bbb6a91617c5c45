/* Seeds for the fuzzers, written at fuzz time into build-fuzz/ (no binaries in the repository):
 *
 *   mkseeds GGUF_DIR SAFETENSORS_DIR GOLDEN.gguf...
 *
 * For each golden file (written by ggml): a small copy with every metadata entry (all 13 value
 * types, string arrays, empty ones) and every tensor cut to two blocks of its first row, so every
 * block type reaches the decoder within a few kilobytes; the same as GGUF version 2, and with
 * general.alignment = 1 so that tensors sit at odd offsets. For safetensors: small files by
 * hand, every dtype, scalars, empty shapes, __metadata__. The hostile and damaged corpora are
 * copied beside these by fuzz.mk. */
#include "tensormap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, const tm_error *err)
{
    fprintf(stderr, "mkseeds: %s: %s\n", what, err ? err->message : "failed");
    exit(1);
}

static char *cstr(tm_str s)
{
    char *p = malloc(s.len + 1);
    if (!p)
        die("malloc", NULL);
    memcpy(p, s.ptr, s.len);
    p[s.len] = '\0';
    return p;
}

static tm_status copy_kv(tm_writer *w, const tm_kv *kv, tm_error *err)
{
    char *key = cstr(kv->key);
    tm_status st;
    if (kv->type == TM_V_STRING) {
        st = tm_writer_kv_str(w, key, (const char *)kv->data, kv->data_bytes, err);
    } else if (kv->type != TM_V_ARRAY) {
        uint8_t v[8];
        memcpy(v, kv->data, kv->data_bytes); /* little-endian, as this x86/arm host */
        st = tm_writer_kv_scalar(w, key, kv->type, v, err);
    } else if (kv->elem_type == TM_V_STRING) {
        const char **strs = calloc(kv->count + 1, sizeof *strs);
        size_t *lens = calloc(kv->count + 1, sizeof *lens);
        tm_str_iter it;
        tm_str s;
        uint64_t n = 0;
        if (!strs || !lens)
            die("malloc", NULL);
        if (tm_kv_strings(kv, &it) == TM_OK)
            while (tm_str_next(&it, &s)) {
                strs[n] = s.ptr;
                lens[n++] = (size_t)s.len;
            }
        st = tm_writer_kv_str_array(w, key, strs, lens, n, err);
        free(strs);
        free(lens);
    } else {
        void *elems = malloc(kv->data_bytes + 1);
        if (!elems)
            die("malloc", NULL);
        memcpy(elems, kv->data, kv->data_bytes);
        st = tm_writer_kv_array(w, key, kv->elem_type, elems, kv->count, err);
        free(elems);
    }
    free(key);
    return st;
}

/* The golden file with every tensor cut to two blocks. */
static void small_copy(const tm_file *f, const char *out, uint32_t version, uint32_t alignment)
{
    tm_writer *w;
    tm_error err;
    if (tm_writer_new(&w, &err) != TM_OK || tm_writer_set_version(w, version, &err) != TM_OK ||
        tm_writer_set_alignment(w, alignment, &err) != TM_OK)
        die(out, &err);
    if (alignment != TM_DEFAULT_ALIGNMENT &&
        tm_writer_kv_scalar(w, "general.alignment", TM_V_U32, &alignment, &err) != TM_OK)
        die(out, &err);
    for (uint64_t i = 0; i < tm_n_kv(f); i++) {
        const tm_kv *kv = tm_kv_at(f, i);
        if (kv->key.len == 17 && memcmp(kv->key.ptr, "general.alignment", 17) == 0)
            continue; /* declared above, when not the default */
        if (copy_kv(w, kv, &err) != TM_OK)
            die(out, &err);
    }
    for (uint64_t i = 0; i < tm_n_tensors(f); i++) {
        const tm_tensor *t = tm_tensor_at(f, i);
        /* at most two blocks of the first row: the decoder sees every type, the seed stays
         * small enough for the fuzzer's max_len */
        uint64_t be = tm_type_block_elems(t->type) ? tm_type_block_elems(t->type) : 1;
        uint64_t ne[4] = {t->ne[0] < 2 * be ? t->ne[0] : 2 * be, 1, 1, 1};
        char *name = cstr(t->name);
        if (tm_writer_tensor(w, name, t->type, t->n_dims, ne, t->data, &err) != TM_OK)
            die(out, &err);
        free(name);
    }
    if (tm_writer_finish(w, out, &err) != TM_OK)
        die(out, &err);
}

static void safetensors(const char *dir, const char *name, const char *json, size_t data_len)
{
    char path[4096];
    size_t hlen = (strlen(json) + 7) / 8 * 8; /* the format pads the header with spaces */
    uint8_t prefix[8];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    if (!fp)
        die(path, NULL);
    for (unsigned i = 0; i < 8; i++)
        prefix[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    fwrite(prefix, 1, 8, fp);
    fputs(json, fp);
    for (size_t i = strlen(json); i < hlen; i++)
        fputc(' ', fp);
    for (size_t i = 0; i < data_len; i++) /* values that decode to ordinary numbers */
        fputc((int)(0x3c ^ (i * 7 & 0x13)), fp);
    fclose(fp);
}

static void safetensors_seeds(const char *dir)
{
    safetensors(dir, "every_dtype.safetensors",
                "{\"__metadata__\":{\"format\":\"pt\",\"note\":\"seed\"},"
                "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                "\"b\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[24,32]},"
                "\"c\":{\"dtype\":\"BF16\",\"shape\":[],\"data_offsets\":[32,34]},"
                "\"d\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[34,34]},"
                "\"e\":{\"dtype\":\"I64\",\"shape\":[1,1],\"data_offsets\":[34,42]},"
                "\"f\":{\"dtype\":\"F8_E4M3\",\"shape\":[3],\"data_offsets\":[42,45]},"
                "\"g\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[45,47]},"
                "\"h\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[47,55]},"
                "\"i\":{\"dtype\":\"F8_E5M2\",\"shape\":[1],\"data_offsets\":[55,56]},"
                "\"j\":{\"dtype\":\"I32\",\"shape\":[2,1,1,1],\"data_offsets\":[56,64]},"
                "\"k\":{\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[64,66]},"
                "\"l\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[66,68]},"
                "\"m\":{\"dtype\":\"U16\",\"shape\":[1],\"data_offsets\":[68,70]},"
                "\"n\":{\"dtype\":\"U32\",\"shape\":[1],\"data_offsets\":[70,74]},"
                "\"o\":{\"dtype\":\"U64\",\"shape\":[1],\"data_offsets\":[74,82]}}",
                82);
    safetensors(dir, "one.safetensors",
                "{\"w\":{\"dtype\":\"F32\",\"shape\":[4,4],\"data_offsets\":[0,64]}}", 64);
    safetensors(dir, "out_of_order.safetensors",
                "{\"z\":{\"dtype\":\"F16\",\"shape\":[8],\"data_offsets\":[16,32]},"
                "\"y\":{\"dtype\":\"F16\",\"shape\":[8],\"data_offsets\":[0,16]}}", 32);
    safetensors(dir, "empty.safetensors", "{}", 0);
    safetensors(dir, "metadata_only.safetensors", "{\"__metadata__\":{\"k\":\"v\"}}", 0);
}

int main(int argc, char **argv)
{
    char out[4096];
    if (argc < 3) {
        fprintf(stderr, "usage: mkseeds GGUF_DIR SAFETENSORS_DIR GOLDEN.gguf...\n");
        return 2;
    }
    for (int i = 3; i < argc; i++) {
        tm_file *f;
        tm_error err;
        const char *base = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
        if (tm_open(argv[i], 0, &f, &err) != TM_OK)
            die(argv[i], &err);
        snprintf(out, sizeof out, "%s/small-%s", argv[1], base);
        small_copy(f, out, 3, tm_file_layout(f)->alignment);
        snprintf(out, sizeof out, "%s/small-v2-%s", argv[1], base);
        small_copy(f, out, 2, tm_file_layout(f)->alignment);
        snprintf(out, sizeof out, "%s/small-align1-%s", argv[1], base);
        small_copy(f, out, 3, 1);
        tm_close(f);
    }
    safetensors_seeds(argv[2]);
    return 0;
}
