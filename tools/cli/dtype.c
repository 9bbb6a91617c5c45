/* The dtype a tensor's values come out in, and a value of it read from its bytes. Both formats
 * store values little-endian, and so does every host the library runs on (it assumes one, as
 * ggml does): a value is its bytes copied into the C type. */
#include "dtype.h"

#include <inttypes.h>
#include <string.h>

static const cli_dtype f32 = {"<f4", "f32", 4, CLI_DT_FLOAT, false};

static const struct {
    tm_type type;
    cli_dtype d;
} own[] = {
    {TM_TYPE_F64, {"<f8", "f64", 8, CLI_DT_FLOAT, true}},
    {TM_TYPE_I8, {"|i1", "i8", 1, CLI_DT_SIGNED, true}},
    {TM_TYPE_I16, {"<i2", "i16", 2, CLI_DT_SIGNED, true}},
    {TM_TYPE_I32, {"<i4", "i32", 4, CLI_DT_SIGNED, true}},
    {TM_TYPE_I64, {"<i8", "i64", 8, CLI_DT_SIGNED, true}},
    {TM_TYPE_U8, {"|u1", "u8", 1, CLI_DT_UNSIGNED, true}},
    {TM_TYPE_U16, {"<u2", "u16", 2, CLI_DT_UNSIGNED, true}},
    {TM_TYPE_U32, {"<u4", "u32", 4, CLI_DT_UNSIGNED, true}},
    {TM_TYPE_U64, {"<u8", "u64", 8, CLI_DT_UNSIGNED, true}},
    {TM_TYPE_BOOL, {"|b1", "bool", 1, CLI_DT_BOOL, true}},
};

const cli_dtype *cli_dtype_of(tm_type type)
{
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (own[i].type == type)
            return &own[i].d;
    return &f32;
}

long double cli_dtype_value(const cli_dtype *d, const uint8_t *p)
{
    switch (d->kind) {
    case CLI_DT_FLOAT: {
        if (d->size == 4) {
            float v;
            memcpy(&v, p, 4);
            return v;
        }
        double v;
        memcpy(&v, p, 8);
        return v;
    }
    case CLI_DT_SIGNED: {
        /* the value's bytes into the low end of an int64, sign-extended from its top byte */
        int64_t v = (int8_t)p[d->size - 1] < 0 ? -1 : 0;
        memcpy(&v, p, d->size);
        return (long double)v;
    }
    case CLI_DT_UNSIGNED: {
        uint64_t v = 0;
        memcpy(&v, p, d->size);
        return (long double)v;
    }
    case CLI_DT_BOOL:
        return p[0] != 0;
    }
    return 0;
}

void cli_dtype_text(const cli_dtype *d, const uint8_t *p, char *buf, size_t size)
{
    const long double v = cli_dtype_value(d, p);
    if (d->kind == CLI_DT_FLOAT)
        cli_float_text((double)v, d->size == 4, buf, size);
    else if (d->kind == CLI_DT_SIGNED)
        snprintf(buf, size, "%" PRId64, (int64_t)v);
    else
        snprintf(buf, size, "%" PRIu64, (uint64_t)v);
}

json_t *cli_dtype_json(const cli_dtype *d, const uint8_t *p)
{
    if (d->kind == CLI_DT_FLOAT) { /* from the bytes, so that a NaN keeps its bits */
        uint64_t bits = 0;
        memcpy(&bits, p, d->size);
        return cli_json_float((double)cli_dtype_value(d, p), d->size == 4, bits);
    }
    const long double v = cli_dtype_value(d, p);
    return d->kind == CLI_DT_SIGNED ? cli_json_i64((int64_t)v) : cli_json_u64((uint64_t)v);
}
