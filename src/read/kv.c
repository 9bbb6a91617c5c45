/* Metadata entries read in place: typed getters, string-array iteration, <arch>.<suffix>. */
#include "../common/internal.h"

#include <stdlib.h>

uint64_t tm_n_kv(const tm_file *f) { return f ? f->layout.n_kv : 0; }

const tm_kv *tm_kv_at(const tm_file *f, uint64_t i)
{
    return f && i < f->layout.n_kv ? &f->kvs[i] : NULL;
}

/* One fixed-size value at p (unaligned, little-endian), widened. */
static tm_value decode(tm_vtype type, const uint8_t *p)
{
    tm_value v = {.type = type};
    const uint64_t raw = tm__load_le(p, tm_vtype_size(type));
    switch (type) {
    case TM_V_U8:
    case TM_V_U16:
    case TM_V_U32:
    case TM_V_U64:
        v.as.u = raw;
        break;
    case TM_V_I8:
        v.as.i = (int8_t)(uint8_t)raw;
        break;
    case TM_V_I16:
        v.as.i = (int16_t)(uint16_t)raw;
        break;
    case TM_V_I32:
        v.as.i = (int32_t)(uint32_t)raw;
        break;
    case TM_V_I64:
        v.as.i = (int64_t)raw;
        break;
    case TM_V_F32: {
        const uint32_t bits = (uint32_t)raw;
        float x;
        memcpy(&x, &bits, sizeof x);
        v.as.f = x;
        break;
    }
    case TM_V_F64:
        memcpy(&v.as.f, &raw, sizeof v.as.f);
        break;
    case TM_V_BOOL:
        v.as.b = raw != 0;
        break;
    case TM_V_STRING:
    case TM_V_ARRAY:
        break; /* not fixed-size: the callers never pass them */
    }
    return v;
}

tm_status tm_kv_value(const tm_kv *kv, tm_value *out)
{
    if (!kv || !out)
        return kv ? TM_INVALID_ARG : TM_NOT_FOUND;
    if (kv->type == TM_V_ARRAY)
        return TM_WRONG_TYPE;
    if (kv->type == TM_V_STRING) {
        *out = (tm_value){.type = TM_V_STRING,
                          .as.s = {(const char *)kv->data, kv->data_bytes}};
        return TM_OK;
    }
    *out = decode(kv->type, kv->data);
    return TM_OK;
}

tm_status tm_kv_elem(const tm_kv *kv, uint64_t i, tm_value *out)
{
    if (!kv || !out)
        return kv ? TM_INVALID_ARG : TM_NOT_FOUND;
    if (kv->type != TM_V_ARRAY || kv->elem_type == TM_V_STRING)
        return TM_WRONG_TYPE;
    if (i >= kv->count)
        return TM_INVALID_ARG;
    *out = decode(kv->elem_type, kv->data + i * tm_vtype_size(kv->elem_type));
    return TM_OK;
}

tm_status tm_kv_get_uint(const tm_kv *kv, uint64_t *out)
{
    tm_value v;
    tm_status st = tm_kv_value(kv, out ? &v : NULL);
    if (st != TM_OK)
        return st;
    switch (v.type) {
    case TM_V_U8:
    case TM_V_U16:
    case TM_V_U32:
    case TM_V_U64:
        *out = v.as.u;
        return TM_OK;
    case TM_V_I8:
    case TM_V_I16:
    case TM_V_I32:
    case TM_V_I64:
        if (v.as.i < 0)
            return TM_WRONG_TYPE;
        *out = (uint64_t)v.as.i;
        return TM_OK;
    default:
        return TM_WRONG_TYPE;
    }
}

tm_status tm_kv_get_float(const tm_kv *kv, double *out)
{
    tm_value v;
    tm_status st = tm_kv_value(kv, out ? &v : NULL);
    if (st != TM_OK)
        return st;
    if (v.type != TM_V_F32 && v.type != TM_V_F64)
        return TM_WRONG_TYPE;
    *out = v.as.f;
    return TM_OK;
}

tm_status tm_kv_get_str(const tm_kv *kv, tm_str *out)
{
    tm_value v;
    tm_status st = tm_kv_value(kv, out ? &v : NULL);
    if (st != TM_OK)
        return st;
    if (v.type != TM_V_STRING)
        return TM_WRONG_TYPE;
    *out = v.as.s;
    return TM_OK;
}

tm_status tm_kv_strings(const tm_kv *kv, tm_str_iter *it)
{
    if (!kv || !it)
        return kv ? TM_INVALID_ARG : TM_NOT_FOUND;
    if (kv->type != TM_V_ARRAY || kv->elem_type != TM_V_STRING)
        return TM_WRONG_TYPE;
    *it = (tm_str_iter){kv->data, kv->data + kv->data_bytes, kv->count};
    return TM_OK;
}

/* Each length is checked against the array's own bytes again, so the walk stays inside them
 * even if the mapped file was rewritten after tm_open. */
bool tm_str_next(tm_str_iter *it, tm_str *out)
{
    if (!it || !out || it->left == 0 || (uint64_t)(it->end - it->p) < 8)
        return false;
    const uint64_t len = tm__load_le(it->p, 8);
    if (len > (uint64_t)(it->end - it->p) - 8)
        return false;
    *out = (tm_str){(const char *)it->p + 8, len};
    it->p += 8 + len;
    it->left--;
    return true;
}

tm_str tm_architecture(const tm_file *f)
{
    tm_str s = {NULL, 0};
    if (tm_kv_get_str(tm_kv_find(f, "general.architecture"), &s) != TM_OK)
        return (tm_str){NULL, 0};
    return s;
}

const tm_kv *tm_arch_key(const tm_file *f, const char *suffix)
{
    const tm_str arch = tm_architecture(f);
    if (!arch.ptr || !suffix)
        return NULL;
    const size_t n_suffix = strlen(suffix);
    /* arch is at most TM_MAX_STRING_LEN bytes: the sum cannot wrap. No key is longer than
     * TM_MAX_NAME_LEN, so a longer one is not looked for (nor allocated). */
    const size_t len = (size_t)arch.len + 1 + n_suffix;
    if (len > TM_MAX_NAME_LEN)
        return NULL;
    char stack[256];
    char *key = len <= sizeof stack ? stack : malloc(len);
    if (!key)
        return NULL;
    memcpy(key, arch.ptr, (size_t)arch.len);
    key[arch.len] = '.';
    memcpy(key + arch.len + 1, suffix, n_suffix);
    const tm_kv *kv = tm_kv_findn(f, key, len);
    if (key != stack)
        free(key);
    return kv;
}
