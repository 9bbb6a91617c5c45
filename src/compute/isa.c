/* The instruction-set paths: every path's kernels, merged once from the kernel files' tables, and
 * the choice of the path that runs (TM_ISA, tm_set_isa, or the best one cpuid and XCR0 allow).
 *
 * One rule for every kernel family (kernels.h: TM__FAMILIES): a path's slot holds the kernel of
 * its own tables, else the one its fallback path holds (TM__ISA_LIST), resolved once, at first
 * use. The choice is a pointer to a merged path held in an atomic, so every later call costs one
 * acquire load, and nothing compares a name at call time. Nothing here is compiled with -m
 * flags: SIMD code is reached only through a path the CPU check has approved. */
#include "../common/internal.h"
#include "compute.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* X(table, PATH) for each kernel file of this build, written on this file's command line by
 * mk/sources.mk from its lists of kernel files (the list a file is in is its path), so that a
 * new kernel file is one line there. A table its file does not define fails the link. */
#ifndef TM__KERNEL_TABLES
#error "TM__KERNEL_TABLES (the kernel files of this build) comes from mk/sources.mk: use make"
#endif

#define DECLARE_TABLE(table, isa) extern const tm__kernels table;
TM__KERNEL_TABLES(DECLARE_TABLE)
#undef DECLARE_TABLE

static const struct {
    const tm__kernels *table;
    unsigned isa;
} tables[] = {
#define TABLE_REF(table, isa) { &table, TM__ISA_##isa },
    TM__KERNEL_TABLES(TABLE_REF)
#undef TABLE_REF
};

/* ---- the paths, their tables merged -------------------------------------------------------- */

enum {
#define FAMILY_ENUM(family, fn_type) FAMILY_##family,
    TM__FAMILIES(FAMILY_ENUM)
#undef FAMILY_ENUM
    N_FAMILIES
};

/* A path as the entry points see it: its tables merged, and every empty slot filled with the
 * kernel of its fallback path, so one load finds the kernel. Built once, at first use. */
typedef struct path {
    const char *name;
    unsigned fallback;                         /* a TM__ISA_ id */
    unsigned needs;                            /* TM__X86_ bits */
    bool built;                                /* some kernel table of this build belongs to it */
    tm__kernels k;                             /* NULL: no path below has a kernel */
    unsigned char from[N_FAMILIES][TM__SLOTS]; /* the path whose own table holds k's kernel */
} path;

#define FALLBACK_FIRST(id, name, fallback, needs) \
    _Static_assert(TM__ISA_##fallback <= TM__ISA_##id, "a fallback must come before its path");
TM__ISA_LIST(FALLBACK_FIRST)
#undef FALLBACK_FIRST

static path paths[TM__N_ISAS] = {
#define PATH_INIT(id, name_, fallback_, needs_) \
    [TM__ISA_##id] = { .name = name_, .fallback = TM__ISA_##fallback_, .needs = (needs_) },
    TM__ISA_LIST(PATH_INIT)
#undef PATH_INIT
};

/* The path stored when TM_ISA names a path this machine cannot run: every call then fails
 * with TM_ISA and says why, rather than silently running another path. */
static const path refused = { .name = "none" };

/* Fill the slots of p still empty from src: a table of path own, or (fallback not NULL) that
 * path's merged kernels, each from the path it records. */
static void fill(path *p, const tm__kernels *src, unsigned own, const path *fallback)
{
    for (unsigned s = 0; s < TM__SLOTS; s++) {
#define FILL(family, fn_type)                                                                 \
        if (!p->k.family[s] && src->family[s]) {                                              \
            p->k.family[s] = src->family[s];                                                  \
            p->from[FAMILY_##family][s] =                                                     \
                fallback ? fallback->from[FAMILY_##family][s] : (unsigned char)own;           \
        }
        TM__FAMILIES(FILL)
#undef FILL
    }
}

/* A batched kernel gives, per column, the bits of one path's 1-column kernel: mm_q8 those of
 * mv_q8, mm_f32 those of mv_f32. A batched kernel from another path than the 1-column kernel
 * for the type (none today: AVX-512 has batched forms of its own 1-column ones) is dropped, so
 * that tm_matmul's columns stay tm_matvec's y bit for bit there; they run the 1-column kernel.
 * So is an x_q8 from another path than mv_q8: it writes the layout of its own path's kernel. */
static void keep_matching_batched(path *p)
{
    for (unsigned s = 0; s < TM__SLOTS; s++) {
#define KEEP_MATCHING(mm, mv)                                                                 \
        if (p->k.mm[s] && (!p->k.mv[s] || p->from[FAMILY_##mm][s] != p->from[FAMILY_##mv][s])) \
            p->k.mm[s] = NULL;
        KEEP_MATCHING(mm_q8, mv_q8)
        KEEP_MATCHING(mm_f32, mv_f32)
        KEEP_MATCHING(x_q8, mv_q8)
#undef KEEP_MATCHING
    }
}

static pthread_once_t merged_once = PTHREAD_ONCE_INIT;

static void merge(void)
{
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
        path *p = &paths[tables[t].isa];
        p->built = true;
        fill(p, tables[t].table, tables[t].isa, NULL);
    }
    /* fallbacks come first in the list, so each one is complete when its path takes from it */
    for (unsigned i = 0; i < TM__N_ISAS; i++) {
        const path *fallback = &paths[paths[i].fallback];
        if (paths[i].built && fallback != &paths[i])
            fill(&paths[i], &fallback->k, 0, fallback);
        keep_matching_batched(&paths[i]);
    }
}

static void ensure_merged(void) { pthread_once(&merged_once, merge); }

/* ---- choosing one ---------------------------------------------------------------------------- */

static _Atomic(const path *) active;

static bool runs_here(unsigned isa)
{
    const unsigned needs = paths[isa].needs;
#if defined(__x86_64__)
    if (needs)
        return (tm__x86_features() & needs) == needs;
#endif
    return needs == 0;
}

static int isa_named(const char *name)
{
    for (unsigned i = 0; i < TM__N_ISAS; i++)
        if (strcmp(paths[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Why name cannot be used, into err; TM_OK when it can (and *out is set). */
static tm_status check_isa(const char *context, const char *name, const path **out,
                           tm_error *err)
{
    ensure_merged();
    const int i = isa_named(name);
    if (i >= 0 && paths[i].built && runs_here((unsigned)i)) {
        *out = &paths[i];
        return TM_OK;
    }
    char q[80];
    tm__quote(q, sizeof q, name, strlen(name));
    if (i >= 0)
        return tm__fail(err, TM_ISA, TM_NO_OFFSET,
                        paths[i].built ? "%s: instruction set %s is not supported by this CPU "
                                         "or its operating system"
                                       : "%s: instruction set %s is not built into the library "
                                         "for this architecture",
                        context, q);
    char known[64] = "";
    for (unsigned k = 0; k < TM__N_ISAS; k++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", k ? ", " : "",
                 paths[k].name);
    return tm__fail(err, TM_ISA, TM_NO_OFFSET, "%s: instruction set %s is unknown (known: %s)",
                    context, q, known);
}

static const path *choose(void)
{
    const char *env = getenv("TM_ISA");
    if (env && *env) {
        const path *k;
        return check_isa("TM_ISA", env, &k, NULL) == TM_OK ? k : &refused;
    }
    ensure_merged();
    for (unsigned i = TM__N_ISAS; i-- > 0;) /* best last */
        if (paths[i].built && runs_here(i))
            return &paths[i];
    return &paths[TM__ISA_SCALAR];
}

static const path *active_path(void)
{
    const path *k = atomic_load_explicit(&active, memory_order_acquire);
    if (!k) {
        const path *none = NULL;
        k = choose();
        /* two first calls may race: both computed the same answer, keep the first stored */
        if (!atomic_compare_exchange_strong_explicit(&active, &none, k, memory_order_acq_rel,
                                                     memory_order_acquire))
            k = none;
    }
    return k;
}

const tm__kernels *tm__active_kernels(const char *fn, tm_error *err)
{
    const path *k = active_path();
    if (k != &refused)
        return &k->k;
    /* say why again (the environment is read, not stored); tm_set_isa clears this */
    char context[64];
    snprintf(context, sizeof context, "%s%sTM_ISA", fn ? fn : "", fn ? ": " : "");
    const char *env = getenv("TM_ISA");
    const path *unused;
    if (!env || check_isa(context, env, &unused, err) == TM_OK)
        tm__fail(err, TM_ISA, TM_NO_OFFSET, "%s named an instruction set this machine cannot run",
                 context);
    return NULL;
}

const char *tm_isa(void) { return active_path()->name; }

tm_status tm_set_isa(const char *name, tm_error *err)
{
    const path *k;
    if (!name)
        return tm__fail(err, TM_INVALID_ARG, TM_NO_OFFSET, "tm_set_isa: name is NULL");
    tm_status st = check_isa("tm_set_isa", name, &k, err);
    if (st == TM_OK)
        atomic_store_explicit(&active, k, memory_order_release);
    return st;
}

bool tm_isa_available(const char *name)
{
    const path *k;
    return name && check_isa("", name, &k, NULL) == TM_OK;
}

const char *tm_isa_built(unsigned i)
{
    ensure_merged();
    for (unsigned k = 0; k < TM__N_ISAS; k++)
        if (paths[k].built && i-- == 0)
            return paths[k].name;
    return NULL;
}

/* ---- lookups ------------------------------------------------------------------------------- */

const tm__kernels *tm__path_kernels(unsigned isa)
{
    ensure_merged();
    return isa < TM__N_ISAS && paths[isa].built ? &paths[isa].k : NULL;
}

/* Path isa's slot for type, with *from set from family's record; -1 when there is none. */
static int slot_of(unsigned isa, tm_type type, unsigned family, unsigned *from)
{
    const int slot = tm__type_slot(type);
    if (!tm__path_kernels(isa) || slot < 0)
        return -1;
    if (from)
        *from = paths[isa].from[family][slot];
    return slot;
}

tm__dequant_fn *tm__kernel_for(unsigned isa, tm_type type, unsigned *from)
{
    const int slot = slot_of(isa, type, FAMILY_dequant, from);
    return slot < 0 ? NULL : paths[isa].k.dequant[slot];
}

/* whether k has a kernel of family in slot */
static bool has_kernel(const tm__kernels *k, unsigned family, int slot)
{
    switch (family) {
#define HAS_KERNEL(family_, fn_type) \
    case FAMILY_##family_:           \
        return k->family_[slot] != NULL;
        TM__FAMILIES(HAS_KERNEL)
#undef HAS_KERNEL
    }
    return false;
}

/* Path isa's kernel of f32_family (TM_MATVEC_F32) or q8_family (TM_MATVEC_Q8) for type. */
static bool kernel_for_mode(unsigned isa, tm_type type, unsigned mode, unsigned f32_family,
                            unsigned q8_family, unsigned *from)
{
    if (mode != TM_MATVEC_F32 && mode != TM_MATVEC_Q8)
        return false;
    const unsigned family = mode == TM_MATVEC_Q8 ? q8_family : f32_family;
    const int slot = slot_of(isa, type, family, from);
    return slot >= 0 && has_kernel(&paths[isa].k, family, slot);
}

bool tm__matvec_kernel_for(unsigned isa, tm_type type, unsigned mode, unsigned *from)
{
    return kernel_for_mode(isa, type, mode, FAMILY_mv_f32, FAMILY_mv_q8, from);
}

bool tm__matmul_kernel_for(unsigned isa, tm_type type, unsigned mode, unsigned *from)
{
    return kernel_for_mode(isa, type, mode, FAMILY_mm_f32, FAMILY_mm_q8, from);
}

const tm__kernels *tm__kernel_table(size_t i, unsigned *isa)
{
    if (i >= sizeof tables / sizeof tables[0])
        return NULL;
    if (isa)
        *isa = tables[i].isa;
    return tables[i].table;
}

bool tm_type_can_dequant(tm_type type)
{
    return tm__kernel_for(TM__ISA_SCALAR, type, NULL) != NULL;
}
