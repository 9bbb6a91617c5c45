/* The element-type table (ggml's ids, names and block geometry), the safetensors dtype names, and
 * the metadata value types. */
#include "internal.h"

/* The geometry and names of every type, from the one list in tensormap.h. */
#define TYPE_INFO(name, id, text, block_elems, block_bytes) \
    [TM_TYPE_##name - BASE] = {text, block_elems, block_bytes},
#define BASE 0
static const tm__type_info ggml_types[] = { TM_GGML_TYPE_LIST(TYPE_INFO) };
#undef BASE
#define BASE TM_TYPE_U8
static const tm__type_info st_types[] = { TM_ST_TYPE_LIST(TYPE_INFO) };
#undef BASE
#undef TYPE_INFO

/* Ids ggml once had and removed: known by name, with no block geometry (block size 0), so that
 * a file naming one is told "removed" rather than "unknown", and nothing divides by its size. */
static const char *const removed_types[] = {
    [4] = "q4_2",       [5] = "q4_3",       [31] = "q4_0_4_4",   [32] = "q4_0_4_8",
    [33] = "q4_0_8_8",  [36] = "iq4_nl_4_4", [37] = "iq4_nl_4_8", [38] = "iq4_nl_8_8",
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

/* safetensors dtypes as the reference spells them. Each is a type of one element a block, so
 * an element's size is the type's block bytes. */
static const tm__st_dtype st_dtypes[] = {
    {"F64", TM_TYPE_F64},         {"F32", TM_TYPE_F32},         {"F16", TM_TYPE_F16},
    {"BF16", TM_TYPE_BF16},       {"I64", TM_TYPE_I64},         {"I32", TM_TYPE_I32},
    {"I16", TM_TYPE_I16},         {"I8", TM_TYPE_I8},           {"U64", TM_TYPE_U64},
    {"U32", TM_TYPE_U32},         {"U16", TM_TYPE_U16},         {"U8", TM_TYPE_U8},
    {"BOOL", TM_TYPE_BOOL},       {"F8_E4M3", TM_TYPE_F8_E4M3}, {"F8_E5M2", TM_TYPE_F8_E5M2},
};

const tm__st_dtype *tm__st_dtype_named(const char *name)
{
    for (size_t i = 0; i < COUNT(st_dtypes); i++)
        if (strcmp(name, st_dtypes[i].name) == 0)
            return &st_dtypes[i];
    return NULL;
}

const char *tm__st_dtype_name(tm_type type)
{
    for (size_t i = 0; i < COUNT(st_dtypes); i++)
        if (st_dtypes[i].type == type)
            return st_dtypes[i].name;
    return NULL;
}

/* The metadata value types' names and sizes, from the one list in tensormap.h. */
#define VTYPE_INFO(name, id, text, bytes) [TM_V_##name] = {text, bytes},
static const struct {
    const char *name;
    uint32_t size;
} vtypes[] = { TM_VTYPE_LIST(VTYPE_INFO) };
#undef VTYPE_INFO

const char *tm_vtype_name(tm_vtype type)
{
    return (unsigned)type < COUNT(vtypes) ? vtypes[type].name : NULL;
}

uint32_t tm_vtype_size(tm_vtype type)
{
    return (unsigned)type < COUNT(vtypes) ? vtypes[type].size : 0;
}
