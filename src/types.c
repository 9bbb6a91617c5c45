/* The element-type table (ggml's ids, names and block geometry) and the metadata value types. */
#include "internal.h"

/* ggml's type traits (ggml.c, type_traits[]): elements per block and bytes per block. The last
 * three, which came after the ggml headers this was written from, were measured on the golden
 * corpus: each raw_blocks tensor holds 96 blocks, so ne0 / 96 and n_bytes / 96. */
static const tm__type_info ggml_types[] = {
    [TM_TYPE_F32] = {"f32", 1, 4},
    [TM_TYPE_F16] = {"f16", 1, 2},
    [TM_TYPE_Q4_0] = {"q4_0", 32, 18},
    [TM_TYPE_Q4_1] = {"q4_1", 32, 20},
    [TM_TYPE_Q5_0] = {"q5_0", 32, 22},
    [TM_TYPE_Q5_1] = {"q5_1", 32, 24},
    [TM_TYPE_Q8_0] = {"q8_0", 32, 34},
    [TM_TYPE_Q8_1] = {"q8_1", 32, 36},
    [TM_TYPE_Q2_K] = {"q2_K", 256, 84},
    [TM_TYPE_Q3_K] = {"q3_K", 256, 110},
    [TM_TYPE_Q4_K] = {"q4_K", 256, 144},
    [TM_TYPE_Q5_K] = {"q5_K", 256, 176},
    [TM_TYPE_Q6_K] = {"q6_K", 256, 210},
    [TM_TYPE_Q8_K] = {"q8_K", 256, 292},
    [TM_TYPE_IQ2_XXS] = {"iq2_xxs", 256, 66},
    [TM_TYPE_IQ2_XS] = {"iq2_xs", 256, 74},
    [TM_TYPE_IQ3_XXS] = {"iq3_xxs", 256, 98},
    [TM_TYPE_IQ1_S] = {"iq1_s", 256, 50},
    [TM_TYPE_IQ4_NL] = {"iq4_nl", 32, 18},
    [TM_TYPE_IQ3_S] = {"iq3_s", 256, 110},
    [TM_TYPE_IQ2_S] = {"iq2_s", 256, 82},
    [TM_TYPE_IQ4_XS] = {"iq4_xs", 256, 136},
    [TM_TYPE_I8] = {"i8", 1, 1},
    [TM_TYPE_I16] = {"i16", 1, 2},
    [TM_TYPE_I32] = {"i32", 1, 4},
    [TM_TYPE_I64] = {"i64", 1, 8},
    [TM_TYPE_F64] = {"f64", 1, 8},
    [TM_TYPE_IQ1_M] = {"iq1_m", 256, 56},
    [TM_TYPE_BF16] = {"bf16", 1, 2},
    [TM_TYPE_TQ1_0] = {"tq1_0", 256, 54},
    [TM_TYPE_TQ2_0] = {"tq2_0", 256, 66},
    [TM_TYPE_MXFP4] = {"mxfp4", 32, 17},
    [TM_TYPE_NVFP4] = {"nvfp4", 64, 36},
    [TM_TYPE_Q1_0] = {"q1_0", 128, 18},
    [TM_TYPE_Q2_0] = {"q2_0", 64, 18},
};

/* Ids ggml once had and removed: known by name, with no block geometry (block size 0), so that
 * a file naming one is told "removed" rather than "unknown", and nothing divides by its size. */
static const char *const removed_types[] = {
    [4] = "q4_2",       [5] = "q4_3",       [31] = "q4_0_4_4",   [32] = "q4_0_4_8",
    [33] = "q4_0_8_8",  [36] = "iq4_nl_4_4", [37] = "iq4_nl_4_8", [38] = "iq4_nl_8_8",
};

/* safetensors storage types without a ggml id, from TM_TYPE_U8 = 1024 on. */
static const tm__type_info st_types[] = {
    [TM_TYPE_U8 - TM_TYPE_U8] = {"U8", 1, 1},
    [TM_TYPE_BOOL - TM_TYPE_U8] = {"BOOL", 1, 1},
    [TM_TYPE_F8_E4M3 - TM_TYPE_U8] = {"F8_E4M3", 1, 1},
    [TM_TYPE_F8_E5M2 - TM_TYPE_U8] = {"F8_E5M2", 1, 1},
    [TM_TYPE_U16 - TM_TYPE_U8] = {"U16", 1, 2},
    [TM_TYPE_U32 - TM_TYPE_U8] = {"U32", 1, 4},
    [TM_TYPE_U64 - TM_TYPE_U8] = {"U64", 1, 8},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const tm__type_info *tm__type_get(tm_type type)
{
    const unsigned id = (unsigned)type;
    const tm__type_info *t = NULL;
    if (id < COUNT(ggml_types))
        t = &ggml_types[id];
    else if (id >= TM_TYPE_U8 && id - TM_TYPE_U8 < COUNT(st_types))
        t = &st_types[id - TM_TYPE_U8];
    return t && t->name ? t : NULL;
}

const char *tm__type_removed_name(tm_type type)
{
    const unsigned id = (unsigned)type;
    return id < COUNT(removed_types) ? removed_types[id] : NULL;
}

const char *tm_type_name(tm_type type)
{
    const tm__type_info *t = tm__type_get(type);
    return t ? t->name : tm__type_removed_name(type);
}

uint32_t tm_type_block_elems(tm_type type)
{
    const tm__type_info *t = tm__type_get(type);
    return t ? t->block_elems : 0;
}

uint32_t tm_type_block_bytes(tm_type type)
{
    const tm__type_info *t = tm__type_get(type);
    return t ? t->block_bytes : 0;
}

static const struct {
    const char *name;
    uint32_t size;
} vtypes[] = {
    [TM_V_U8] = {"u8", 1},     [TM_V_I8] = {"i8", 1},      [TM_V_U16] = {"u16", 2},
    [TM_V_I16] = {"i16", 2},   [TM_V_U32] = {"u32", 4},    [TM_V_I32] = {"i32", 4},
    [TM_V_F32] = {"f32", 4},   [TM_V_BOOL] = {"bool", 1},  [TM_V_STRING] = {"str", 0},
    [TM_V_ARRAY] = {"arr", 0}, [TM_V_U64] = {"u64", 8},    [TM_V_I64] = {"i64", 8},
    [TM_V_F64] = {"f64", 8},
};

const char *tm_vtype_name(tm_vtype type)
{
    return (unsigned)type < COUNT(vtypes) ? vtypes[type].name : NULL;
}

uint32_t tm_vtype_size(tm_vtype type)
{
    return (unsigned)type < COUNT(vtypes) ? vtypes[type].size : 0;
}
