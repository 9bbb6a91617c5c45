/* Which kernel each instruction-set path runs, per family (decoding, matvec in float32 and in 8
 * bits) and type, kept by hand: the x86 suite (tests/test_dequant_paths.c) and the NEON check
 * under qemu (tests/arm/matvec_check.c) check the registry (src/compute/isa.c) against it. */
#ifndef TM_TESTS_KERNEL_PINS_H
#define TM_TESTS_KERNEL_PINS_H

#include "../../src/compute/compute.h"
#include "tensormap.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

enum pin_family { PIN_DEQUANT, PIN_MV_F32, PIN_MV_Q8, PIN_FAMILIES };
static const char *const pin_family_names[PIN_FAMILIES] = { "dequant", "matvec f32", "matvec q8" };

/* The types each path has a kernel of its own for, per family, by name: kept by hand on purpose,
 * so that a kernel dropped from its table (which every SIMD-vs-scalar test would still pass, the
 * fallback being exact) is caught. NULL for the scalar path's decoders: every type it decodes
 * (that is what "decodable" means). The matvec lists are docs/matvec.md's table. */
static const struct {
    unsigned isa;
    const char *types[PIN_FAMILIES];
} pinned[] = {
    { TM__ISA_SCALAR, { NULL, " f32 ", " q8_0 q4_0 q4_K q6_K q4_1 q5_0 q5_1 q2_K q3_K q5_K"
                                        " iq4_nl iq4_xs mxfp4 nvfp4 q1_0 q2_0 tq1_0 tq2_0"
                                        " iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m " } },
    { TM__ISA_AVX2, { " f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K"
                      " iq4_nl iq4_xs mxfp4 nvfp4 q1_0 q2_0 tq1_0 tq2_0"
                      " iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m ",
                      " f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs"
                      " mxfp4 ",
                      " q8_0 q4_0 q4_K q6_K q4_1 q5_0 q5_1"
                      " iq4_nl mxfp4 q2_K q3_K q5_K iq4_xs nvfp4 q1_0 q2_0 tq1_0 tq2_0"
                      " iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m f16 bf16 " } },
    { TM__ISA_AVX512, { " f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K"
                        " iq4_nl iq4_xs mxfp4 nvfp4 q1_0 q2_0 tq1_0 tq2_0"
                        " iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m ",
                        " f32 f16 bf16 q8_0 q4_0 q4_K q6_K ",
                        " q8_0 q4_K q6_K q1_0 tq1_0 tq2_0"
                        " iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m f16 bf16 " } },
    { TM__ISA_AVX512FP16, { "", "", " f16 " } },
    { TM__ISA_NEON, { " f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K"
                      " iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m ",
                      " f32 f16 bf16 q8_0 ",
                      " q8_0 q4_K " /* matvec_neon.c */
                      " q4_0 q4_1 q5_0 q5_1 iq4_nl mxfp4 nvfp4 q1_0 q2_0"
                      " q6_K q2_K q3_K q5_K iq4_xs tq1_0 tq2_0 " /* matvec_neon_q8.c */
                      " iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m " /* matvec_neon_iq.c */ } },
};

static const unsigned pin_fallback[TM__N_ISAS] = {
#define PIN_FALLBACK(id, name, fallback, needs) [TM__ISA_##id] = TM__ISA_##fallback,
    TM__ISA_LIST(PIN_FALLBACK)
#undef PIN_FALLBACK
};

static const char *const pin_isa_names[TM__N_ISAS] = {
#define PIN_NAME(id, name, fallback, needs) [TM__ISA_##id] = name,
    TM__ISA_LIST(PIN_NAME)
#undef PIN_NAME
};

static inline bool pinned_own(unsigned isa, enum pin_family f, tm_type type)
{
    char key[32];
    snprintf(key, sizeof key, " %s ", tm_type_name(type));
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++)
        if (pinned[i].isa == isa)
            return pinned[i].types[f] ? strstr(pinned[i].types[f], key) != NULL
                                      : tm_type_can_dequant(type);
    return false;
}

/* Whether path isa runs a kernel for type in family f, and whose (*from). */
static inline bool pin_kernel_on(unsigned isa, enum pin_family f, tm_type type, unsigned *from)
{
    if (f == PIN_DEQUANT)
        return tm__kernel_for(isa, type, from) != NULL;
    return tm__matvec_kernel_for(isa, type, f == PIN_MV_F32 ? TM_MATVEC_F32 : TM_MATVEC_Q8, from);
}

/* Path isa (built here) against the lists, for every decodable type: the kernel it runs is its
 * own when its list says so, and otherwise the one its fallback chain reaches first (avx512 ->
 * avx2 -> scalar), never scalar when a better fallback has one; none at all (matvec: decode +
 * dot) only when no path of the chain has one. Returns the kernels checked, or -1 with the
 * first difference in why. */
static inline int pin_path(unsigned isa, enum pin_family f, char *why, size_t cap)
{
    int checked = 0;
    for (unsigned t = 0; t < 1024u + 64u; t++) {
        const tm_type type = (tm_type)t;
        if ((t >= 64u && t < 1024u) || !tm_type_can_dequant(type))
            continue;
        unsigned want = isa;
        while (!pinned_own(want, f, type) && pin_fallback[want] != want)
            want = pin_fallback[want];
        const bool exists = pinned_own(want, f, type);
        unsigned from = TM__N_ISAS;
        if (pin_kernel_on(isa, f, type, &from) != exists) {
            snprintf(why, cap, "%s: %s on %s: %s", pin_family_names[f], tm_type_name(type),
                     pin_isa_names[isa],
                     exists ? "no kernel" : "a kernel the list does not promise");
            return -1;
        }
        if (exists && from != want) {
            snprintf(why, cap, "%s: %s on %s runs %s's kernel, want %s's", pin_family_names[f],
                     tm_type_name(type), pin_isa_names[isa], pin_isa_names[from],
                     pin_isa_names[want]);
            return -1;
        }
        checked += exists;
    }
    return checked;
}

#endif /* TM_TESTS_KERNEL_PINS_H */
