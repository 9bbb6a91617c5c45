/* The metadata value types: the enum, tm_vtype_name and tm_vtype_size all come from one X-list
 * (TM_VTYPE_LIST); here they are held to GGUF's ids, ggml's names (gguf.cpp, GGUF_TYPE_NAME)
 * and the value sizes (GGUF_TYPE_SIZE), written out by hand, so a slip in the list fails. */
#include "tensormap.h"

#include <criterion/criterion.h>

static const struct {
    tm_vtype type;
    unsigned id;
    const char *name;
    uint32_t size;
} ggml_vtypes[] = {
    {TM_V_U8, 0, "u8", 1},      {TM_V_I8, 1, "i8", 1},       {TM_V_U16, 2, "u16", 2},
    {TM_V_I16, 3, "i16", 2},    {TM_V_U32, 4, "u32", 4},     {TM_V_I32, 5, "i32", 4},
    {TM_V_F32, 6, "f32", 4},    {TM_V_BOOL, 7, "bool", 1},   {TM_V_STRING, 8, "str", 0},
    {TM_V_ARRAY, 9, "arr", 0},  {TM_V_U64, 10, "u64", 8},    {TM_V_I64, 11, "i64", 8},
    {TM_V_F64, 12, "f64", 8},
};

Test(vtype, ids_names_and_sizes_are_ggmls)
{
    for (size_t i = 0; i < sizeof ggml_vtypes / sizeof ggml_vtypes[0]; i++) {
        const tm_vtype t = ggml_vtypes[i].type;
        cr_assert_eq((unsigned)t, ggml_vtypes[i].id, "%s", ggml_vtypes[i].name);
        cr_assert_str_eq(tm_vtype_name(t), ggml_vtypes[i].name, "id %u", ggml_vtypes[i].id);
        cr_assert_eq(tm_vtype_size(t), ggml_vtypes[i].size, "%s", ggml_vtypes[i].name);
    }
}

/* Every id the X-list expands to is one of the 13 above, once: counted through the list
 * itself, so a 14th entry or a repeated id fails here. */
Test(vtype, the_list_holds_exactly_ggmls_13)
{
    unsigned seen = 0, n = 0;
#define COUNT_VTYPE(name, id, text, bytes) (n++, seen |= 1u << (id));
    TM_VTYPE_LIST(COUNT_VTYPE)
#undef COUNT_VTYPE
    cr_assert_eq(n, 13u);
    cr_assert_eq(seen, (1u << 13) - 1u, "ids 0..12 each once, got mask 0x%x", seen);
}

Test(vtype, unknown_ids_have_no_name_and_no_size)
{
    const unsigned unknown[] = {13, 14, 255, 1024, 0x7fffffffu, 0xffffffffu};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        cr_assert_null(tm_vtype_name((tm_vtype)unknown[i]), "id %u", unknown[i]);
        cr_assert_eq(tm_vtype_size((tm_vtype)unknown[i]), 0u, "id %u", unknown[i]);
    }
}
