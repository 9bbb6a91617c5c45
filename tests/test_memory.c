/* info's memory at a context against llama.cpp's own allocations. tests/memory/ALIAS.json holds,
 * for one small model of a family, its header (rebuilt here into a GGUF with `write
 * --from-header`: zero weights, the same metadata) and what a real llama.cpp allocated for it
 * at several contexts, cache types, sequence counts and micro-batches: the bytes of its K, V,
 * r and s cache tensors, taken from the tensors themselves (scripts/llama_memory.py recorded
 * them, with the llama.cpp release named in the file). The expected numbers are llama.cpp's,
 * never this code's: every one must agree byte for byte, and every context llama.cpp refused
 * must be refused. */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(memory, .fini = test_cleanup);

/* tests/memory beside README.md (make sets TM_README to the checkout's copy) */
static const char *recorded_dir(void)
{
    static char dir[4096];
    const char *readme = getenv("TM_README");
    cr_assert(readme, "TM_README is set by make");
    const char *slash = strrchr(readme, '/');
    int n = slash ? (int)(slash - readme) : 1;
    snprintf(dir, sizeof dir, "%.*s/tests/memory", n, slash ? readme : ".");
    return dir;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The recorded families, sorted (malloc'ed names, *n of them). */
static char **recorded(size_t *n)
{
    DIR *d = opendir(recorded_dir());
    cr_assert(d, "no %s", recorded_dir());
    char **names = NULL;
    *n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        names = realloc(names, (*n + 1) * sizeof *names);
        cr_assert(names);
        names[(*n)++] = strndup(e->d_name, len - 5);
    }
    closedir(d);
    qsort(names, *n, sizeof *names, by_name);
    return names;
}

static uint64_t member(const json_t *o, const char *a, const char *b)
{
    return json_u64(json_object_get(o, a), b);
}

/* One family: every recorded allocation against info --json. Returns the mismatches (each
 * logged) and counts the allocations compared. */
static int check_family(const char *alias, int *compared)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.json", recorded_dir(), alias);
    json_error_t jerr;
    json_t *rec = json_load_file(path, 0, &jerr);
    cr_assert(rec, "%s: %s", path, jerr.text);
    cr_assert(json_is_string(json_object_get(rec, "llama_cpp")),
              "%s does not say which llama.cpp it came from", path);
    char name[256];
    snprintf(name, sizeof name, "%s.header.json", alias);
    const char *header = test_path(name);
    cr_assert_eq(json_dump_file(json_object_get(rec, "header"), header, 0), 0);
    snprintf(name, sizeof name, "%s.gguf", alias);
    const char *model = test_path(name);
    tool_result w = tool_run("write", "--from-header", header, model, NULL);
    cr_assert_eq(w.status, 0, "%s: %s", alias, w.err);
    tool_result_free(&w);

    int bad = 0;
    const json_t *allocs = json_object_get(rec, "allocations");
    cr_assert(json_array_size(allocs) > 0, "%s records no allocation", alias);
    for (size_t i = 0; i < json_array_size(allocs); i++) {
        const json_t *a = json_array_get(allocs, i);
        char ctx[24], seq[24], ub[24];
        snprintf(ctx, sizeof ctx, "%lld", json_integer_value(json_object_get(a, "n_ctx")));
        snprintf(seq, sizeof seq, "%lld", json_integer_value(json_object_get(a, "n_seq")));
        snprintf(ub, sizeof ub, "%lld", json_integer_value(json_object_get(a, "n_ubatch")));
        const char *tk = json_string_value(json_object_get(a, "type_k"));
        const char *tv = json_string_value(json_object_get(a, "type_v"));
        const char *args[20] = {"info", "--json", model, "--type-k", tk, "--type-v", tv,
                                "--parallel", seq, "--ubatch", ub};
        size_t n = 11;
        if (strcmp(ctx, "0") != 0) /* 0: the trained context, which info takes by default */
            args[n++] = "--context", args[n++] = ctx;
        if (json_is_true(json_object_get(a, "swa_full")))
            args[n++] = "--swa-full";
        if (json_is_true(json_object_get(a, "kv_unified")))
            args[n++] = "--kv-unified";
        args[n] = NULL;
        tool_result r = tool_run_in(NULL, args);
        cr_assert_eq(r.status, 0, "%s: %s", alias, r.err);
        json_t *j = json_loads(r.out, 0, &jerr);
        cr_assert(j, "%s: %s", alias, jerr.text);
        const json_t *m = json_object_get(j, "memory");
        cr_assert(json_is_object(m), "%s: no memory object", alias);
        bool known = json_is_true(json_object_get(m, "known"));
        const char *what = NULL;
        char got[200] = "", want[200] = "";
        if (json_object_get(a, "error")) {
            if (known)
                what = "llama.cpp refused it, info gave a size";
            snprintf(want, sizeof want, "%s", json_string_value(json_object_get(a, "error")));
        } else if (!known) {
            what = "llama.cpp allocated it, info said";
            snprintf(got, sizeof got, "%s", json_string_value(json_object_get(m, "why")));
        } else {
            uint64_t e[4], g[4] = {member(m, "kv", "k_bytes"), member(m, "kv", "v_bytes"),
                                   member(m, "recurrent", "r_bytes"),
                                   member(m, "recurrent", "s_bytes")};
            static const char *const keys[4] = {"k", "v", "r", "s"};
            for (int k = 0; k < 4; k++)
                e[k] = (uint64_t)json_integer_value(json_object_get(a, keys[k]));
            if (memcmp(e, g, sizeof e) != 0)
                what = "bytes differ";
            snprintf(want, sizeof want, "K %llu V %llu r %llu s %llu", (unsigned long long)e[0],
                     (unsigned long long)e[1], (unsigned long long)e[2], (unsigned long long)e[3]);
            snprintf(got, sizeof got, "K %llu V %llu r %llu s %llu", (unsigned long long)g[0],
                     (unsigned long long)g[1], (unsigned long long)g[2], (unsigned long long)g[3]);
        }
        if (what) {
            bad++;
            cr_log_error("%s at %s tokens, %s sequences%s, K %s V %s, ubatch %s%s: %s\n"
                         "  llama.cpp: %s\n  info:      %s\n", alias, ctx, seq,
                         json_is_true(json_object_get(a, "kv_unified")) ? " (unified)" : "",
                         tk, tv, ub,
                         json_is_true(json_object_get(a, "swa_full")) ? ", full SWA" : "", what,
                         want, got);
        }
        (*compared)++;
        json_decref(j);
        tool_result_free(&r);
    }
    json_decref(rec);
    return bad;
}

Test(memory, every_recorded_llama_cpp_allocation_agrees_byte_for_byte, .timeout = 120)
{
    size_t n;
    char **names = recorded(&n);
    cr_assert_geq(n, 12, "only %zu families recorded in %s", n, recorded_dir());
    int bad = 0, compared = 0;
    for (size_t i = 0; i < n; i++) {
        bad += check_family(names[i], &compared);
        free(names[i]);
    }
    free(names);
    cr_assert_eq(bad, 0, "%d of %d recorded allocations disagree (above)", bad, compared);
}
