/* tensormap meta: every metadata entry in the order the file holds them: index, key, type,
 * value, with long strings cut and arrays summarised. */
#include "../cli/cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: tensormap meta [--json [--full]] FILE\n"
    "\n"
    "List every metadata entry in file order: index, key, value type and value. Strings longer\n"
    "than 60 bytes are cut (\"... and N more bytes\"); an array shows its count and element\n"
    "type and its first few elements. Control bytes, quotes, backslashes and bytes that are not\n"
    "UTF-8 are shown escaped (\\n, \\\", \\\\, \\xNN). Floats are printed with the fewest digits\n"
    "that read back as the same value.\n"
    "\n"
    "  --json    a JSON array of entries, {\"key\", \"type\", \"value\"}, an array as\n"
    "            {\"key\", \"type\": \"arr\", \"element_type\", \"count\", \"bytes\"}; an integer\n"
    "            past 2^53 is a decimal string, a float the shortest decimal that reads back\n"
    "            as it; a string that is not UTF-8 is {\"hex\": \"...\"}\n"
    "  --full    with --json: every element of every array, under \"values\"\n";

enum { STR_SHOWN = 60, ELEM_STR_SHOWN = 24, ELEMS_SHOWN = 6 };

/* A string in quotes, cut at max bytes with the rest counted. */
static void print_quoted(tm_str s, uint64_t max)
{
    putchar('"');
    cli_print_str(stdout, s, max);
    putchar('"');
    if (s.len > max)
        printf(" \u2026 and %" PRIu64 " more bytes", s.len - max);
}

static void print_value(const tm_value *v, uint64_t max_str)
{
    if (v->type == TM_V_STRING) {
        print_quoted(v->as.s, max_str);
        return;
    }
    char text[64];
    cli_scalar_text(v, text, sizeof text);
    fputs(text[0] ? text : "?", stdout);
}

static void print_array(const tm_kv *kv)
{
    printf("%" PRIu64 " of %s", kv->count, tm_vtype_name(kv->elem_type));
    if (kv->count == 0)
        return;
    fputs(": ", stdout);
    uint64_t shown = 0;
    if (kv->elem_type == TM_V_STRING) {
        tm_str_iter it;
        tm_value v = {.type = TM_V_STRING};
        if (tm_kv_strings(kv, &it) == TM_OK)
            for (; shown < ELEMS_SHOWN && tm_str_next(&it, &v.as.s); shown++) {
                fputs(shown ? ", " : "", stdout);
                print_value(&v, ELEM_STR_SHOWN);
            }
    } else {
        tm_value v;
        for (; shown < ELEMS_SHOWN && shown < kv->count && tm_kv_elem(kv, shown, &v) == TM_OK;
             shown++) {
            fputs(shown ? ", " : "", stdout);
            print_value(&v, ELEM_STR_SHOWN);
        }
    }
    if (shown < kv->count)
        fputs(", \u2026", stdout);
}

static int print_text(const tm_file *f)
{
    const uint64_t n = tm_n_kv(f);
    int idx_w = snprintf(NULL, 0, "%" PRIu64, n ? n - 1 : 0);
    int key_w = 3;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len = tm_kv_at(f, i)->key.len;
        if (len > (uint64_t)key_w)
            key_w = len > 48 ? 48 : (int)len;
    }
    printf("%*s  %-*s  %-4s  %s\n", idx_w, "n", key_w, "key", "type", "value");
    for (uint64_t i = 0; i < n; i++) {
        const tm_kv *kv = tm_kv_at(f, i);
        printf("%*" PRIu64 "  ", idx_w, i);
        cli_print_str(stdout, kv->key, UINT64_MAX);
        printf("%*s  %-4s  ", kv->key.len < (uint64_t)key_w ? key_w - (int)kv->key.len : 0, "",
               tm_vtype_name(kv->type));
        tm_value v;
        if (kv->type == TM_V_ARRAY)
            print_array(kv);
        else if (tm_kv_value(kv, &v) == TM_OK)
            print_value(&v, STR_SHOWN);
        putchar('\n');
    }
    return CLI_OK;
}

static json_t *to_json(const tm_file *f, bool full)
{
    json_t *a = json_array();
    for (uint64_t i = 0; a && i < tm_n_kv(f); i++) {
        if (json_array_append_new(a, cli_json_kv(tm_kv_at(f, i), full)) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

static int run(int argc, char **argv)
{
    bool json = false, full = false;
    const cli_flag flags[] = {{"json", &json}, {"full", &full}, {NULL, NULL}};
    const char *arg;
    int rc = cli_simple_args(argc, argv, &cmd_meta, flags, &arg);
    if (rc >= 0)
        return rc;
    if (full && !json) {
        cli_errorf("meta: --full goes with --json");
        return cli_usage(&cmd_meta);
    }
    tm_file *f = cli_open(arg, 0);
    if (!f)
        return CLI_FAIL;
    rc = json ? cli_json_emit(to_json(f, full)) : print_text(f);
    tm_close(f);
    return cli_finish_output(rc);
}

const cli_command cmd_meta = {
    .name = "meta",
    .alias = NULL,
    .summary = "every metadata entry: index, key, type, value",
    .help = help,
    .run = run,
};
