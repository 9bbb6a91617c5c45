/* tools/cli/dtype.c: the element type a tensor's values leave the tool in, as numpy names it.
 * float32 holds every f16, bf16, fp8 and quantized value exactly, so those are decoded to it;
 * it does not hold every f64 or 32- and 64-bit integer (I64 2^53 + 1 would become 2^53, F64
 * 1e300 infinity), so integer, bool and f64 tensors keep their own type: dump writes their
 * bytes as the file holds them, and stats and compare read their values from those bytes. */
#ifndef TM_CLI_DTYPE_H
#define TM_CLI_DTYPE_H

#include "cli.h"

typedef enum cli_dtype_kind { CLI_DT_FLOAT, CLI_DT_SIGNED, CLI_DT_UNSIGNED, CLI_DT_BOOL } cli_dtype_kind;

typedef struct cli_dtype {
    const char *npy;    /* numpy's descr: "<f4", "<f8", "<i8", "|i1", "|u1", "|b1", ... */
    const char *ext;    /* a raw dump's file extension (dump --all): "f32", "i64", "bool", ... */
    uint32_t size;      /* bytes a value */
    cli_dtype_kind kind;
    bool own;           /* the tensor's own type, read from its bytes (false: decoded float32) */
} cli_dtype;

/* What values of the type come out as: float32 for every type but the integers, bool and f64,
 * which come out as themselves. Never NULL (a type without a decoder says "float32" too, and
 * the decoder then refuses it). */
const cli_dtype *cli_dtype_of(tm_type type);
/* The value whose little-endian bytes are at p, as a long double, which holds every value of
 * every dtype exactly (a bool is 0 or 1: any byte but 0 is true). */
long double cli_dtype_value(const cli_dtype *d, const uint8_t *p);
/* The value at p in words (an integer exactly, a float in the fewest digits that read back as
 * it) and as JSON (the tool's rules: integers past 2^53 as strings, a NaN with its bits). */
void cli_dtype_text(const cli_dtype *d, const uint8_t *p, char *buf, size_t size);
json_t *cli_dtype_json(const cli_dtype *d, const uint8_t *p);

#endif
