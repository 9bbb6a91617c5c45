/* The kernel registry (src/compute/isa.c): which kernel each instruction-set path runs, per
 * family (decoding, matvec in float32 and in 8 bits) and type, against the hand-kept lists of
 * tests/support/kernel_pins.h; the tables of a path do not overlap; the slots cover every type.
 * Pure table lookups: checked on every path built for this architecture, whether or not this CPU
 * can run it. */
#include "support/kernel_pins.h"
#include "tensormap.h"

#include <criterion/criterion.h>

/* Every path built here against tests/support/kernel_pins.h, for family f. */
static void pin(enum pin_family f)
{
    int checked = 0;
    for (unsigned isa = 0; isa < TM__N_ISAS; isa++) {
        char why[160];
        if (!tm__path_kernels(isa))
            continue; /* not built for this architecture */
        const int n = pin_path(isa, f, why, sizeof why);
        cr_assert_geq(n, 0, "%s", why);
        checked += n;
    }
    cr_assert_gt(checked, 0);
}

Test(dequant_table, each_path_runs_its_own_decoder_or_the_nearest_fallback) { pin(PIN_DEQUANT); }
Test(matvec_table, each_path_runs_its_own_f32_kernel_or_the_nearest_fallback) { pin(PIN_MV_F32); }
Test(matvec_table, each_path_runs_its_own_q8_kernel_or_the_nearest_fallback) { pin(PIN_MV_Q8); }

/* Merging the tables of a path must not hide a kernel: no two tables of one path fill the same
 * slot of any family. (Every table belongs to a path the library knows by construction: its
 * path is a TM__ISA_ id, mk/sources.mk's list name.) */
Test(dequant_table, tables_of_a_path_do_not_overlap)
{
    unsigned ia, ib, n = 0;
    for (size_t a = 0; tm__kernel_table(a, &ia); a++, n++)
        for (size_t b = a + 1; tm__kernel_table(b, &ib); b++) {
            const tm__kernels *ta = tm__kernel_table(a, NULL), *tb = tm__kernel_table(b, NULL);
            for (unsigned s = 0; ia == ib && s < TM__SLOTS; s++) {
#define NO_OVERLAP(family, fn_type)                                                          \
                cr_assert(!ta->family[s] || !tb->family[s],                                  \
                          "tables %zu and %zu of %s both have a " #family " kernel for slot %u", \
                          a, b, pin_isa_names[ia], s);
                TM__FAMILIES(NO_OVERLAP)
#undef NO_OVERLAP
            }
        }
    cr_assert_geq(n, 4u, "the scalar files' tables at least");
}

/* The slot counts follow the type lists: the largest ggml id has a slot and the first
 * safetensors id comes after them. */
Test(dequant_table, slots_cover_every_type)
{
    cr_assert_eq(TM__GGML_SLOTS, TM_TYPE_Q2_0 + 1);
    cr_assert_eq(TM__ST_SLOTS, TM_TYPE_U64 - TM_TYPE_U8 + 1);
    cr_assert_eq(tm__type_slot(TM_TYPE_U8), TM__GGML_SLOTS);
    cr_assert_eq(tm__type_slot((tm_type)(TM_TYPE_U64 + 1)), -1);
    cr_assert_eq(tm__type_slot((tm_type)TM__GGML_SLOTS), -1);
}
