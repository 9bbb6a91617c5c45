/* Every command with every flag its help documents, text and --json, on the demo model and the
 * golden files: no run may end on a signal, a sanitizer report or an exit status other than
 * 0, 1 or 2. The commands come from `tensormap --help` (the command table), their flags and
 * arguments from `tensormap help NAME` (the same table's help texts), so a command or a flag
 * added later is run here without this file changing; each also runs with --no-mmap and
 * --all-shards after its arguments. Each run gets its own directory, as its
 * working directory and for any output path. */
#include "support/st_writer.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(cli_every, .fini = test_cleanup);

enum { MAX_OPTS = 32, MAX_ARGS = 24, MAX_USAGES = 4, MAX_VALUES = 6 };

typedef struct option_doc {
    char name[48];  /* with the dashes: "--json", "-o" */
    char value[64]; /* the placeholder ("N", "raw|npy|lz4"), "" for a flag */
} option_doc;

typedef struct command_doc {
    char name[32];
    char *help;
    option_doc opts[MAX_OPTS];
    int n_opts;
    char usages[MAX_USAGES][256]; /* the words after "tensormap NAME" on each usage line */
    int n_usages;
} command_doc;

/* A placeholder is what follows an option in the help: starts upper-case or lists choices. */
static bool is_placeholder(const char *w, size_t n)
{
    if (n == 0 || w[0] == '[' || w[0] == '-' || w[0] == '`' || w[0] == '(')
        return false;
    if (memchr(w, '|', n))
        return true;
    if (!isupper((unsigned char)w[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)w[i]) && !strchr("_.:=", w[i]))
            return false;
    return true;
}

static option_doc *find_opt(command_doc *c, const char *name)
{
    for (int i = 0; i < c->n_opts; i++)
        if (strcmp(c->opts[i].name, name) == 0)
            return &c->opts[i];
    return NULL;
}

/* Every "--name" (and "-x, --name") in the help text, with the placeholder after it if any
 * occurrence has one (the usage line's "[--format raw|npy|lz4]" spells out the choices). */
static void parse_options(command_doc *c)
{
    for (const char *p = c->help; (p = strstr(p, "--")) != NULL;) {
        const char *start = p;
        p += 2;
        if (start > c->help && !strchr(" [\n(", start[-1]))
            continue;
        size_t n = 0;
        while (isalnum((unsigned char)p[n]) || p[n] == '-')
            n++;
        if (n == 0 || !isalpha((unsigned char)p[0]))
            continue;
        char name[48];
        snprintf(name, sizeof name, "--%.*s", (int)n, p);
        p += n;
        if (strcmp(name, "--help") == 0)
            continue;
        char value[64] = "";
        if (*p == ' ' || *p == '=') {
            const char *w = p + 1;
            size_t wn = strcspn(w, " ]\n,");
            if (is_placeholder(w, wn) && wn < sizeof value)
                snprintf(value, sizeof value, "%.*s", (int)wn, w);
        }
        option_doc *o = find_opt(c, name);
        if (!o) {
            cr_assert_lt(c->n_opts, MAX_OPTS, "%s: too many options for this test", c->name);
            o = &c->opts[c->n_opts++];
            snprintf(o->name, sizeof o->name, "%s", name);
        }
        /* the usage line's choices ("raw|npy|lz4") beat a body placeholder ("FMT") */
        if (value[0] && (!o->value[0] || (strchr(value, '|') && !strchr(o->value, '|'))))
            snprintf(o->value, sizeof o->value, "%s", value);
    }
    /* "-o, --output OUT": the short form takes the long one's placeholder */
    for (const char *p = c->help; (p = strstr(p, "\n  -")) != NULL; p++) {
        if (p[4] != '-' && isalpha((unsigned char)p[4]) && p[5] == ',' &&
            strncmp(p + 6, " --", 3) == 0) {
            char shrt[4] = {'-', p[4], '\0'}, lng[48];
            size_t n = strcspn(p + 7, " \n");
            snprintf(lng, sizeof lng, "%.*s", (int)n, p + 7);
            option_doc *l = find_opt(c, lng);
            if (l && !find_opt(c, shrt) && c->n_opts < MAX_OPTS) {
                option_doc *o = &c->opts[c->n_opts++];
                snprintf(o->name, sizeof o->name, "%s", shrt);
                snprintf(o->value, sizeof o->value, "%s", l->value);
            }
        }
    }
}

static void parse_usages(command_doc *c)
{
    char prefix[sizeof c->name + 16];
    snprintf(prefix, sizeof prefix, "tensormap %s ", c->name);
    for (const char *line = c->help; line && *line; line = strchr(line, '\n'), line += !!line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *at = strstr(line, prefix);
        bool usage = strncmp(line, "usage: ", 7) == 0 || strncmp(line, "       tensormap", 16) == 0;
        if (!usage || !at || at >= line + len || c->n_usages == MAX_USAGES)
            continue;
        at += strlen(prefix);
        snprintf(c->usages[c->n_usages++], sizeof c->usages[0], "%.*s", (int)(line + len - at),
                 at);
        if (strncmp(line, "usage: ", 7) != 0 && c->n_usages == 1)
            break;
    }
    cr_assert_gt(c->n_usages, 0, "%s: no usage line in its help", c->name);
}

static int load_commands(command_doc *cmds, int max)
{
    tool_result r = tool_run("--help", NULL);
    cr_assert_eq(r.status, 0, "tensormap --help: exit %d", r.status);
    const char *p = strstr(r.out, "\ncommands:\n");
    cr_assert_not_null(p, "no command list in tensormap --help");
    p += strlen("\ncommands:\n");
    int n = 0;
    while (strncmp(p, "  ", 2) == 0 && isalpha((unsigned char)p[2])) {
        cr_assert_lt(n, max);
        size_t len = strcspn(p + 2, " \n");
        snprintf(cmds[n].name, sizeof cmds[n].name, "%.*s", (int)len, p + 2);
        n++;
        p = strchr(p, '\n');
        if (!p)
            break;
        p++;
    }
    tool_result_free(&r);
    cr_assert_gt(n, 5, "tensormap --help lists only %d commands", n);
    for (int i = 0; i < n; i++) {
        tool_result h = tool_run("help", cmds[i].name, NULL);
        cr_assert_eq(h.status, 0, "tensormap help %s: exit %d", cmds[i].name, h.status);
        cmds[i].help = h.out;
        free(h.err);
        parse_options(&cmds[i]);
        parse_usages(&cmds[i]);
    }
    return n;
}

/* ---- turning placeholders into arguments --------------------------------------------------- */

typedef struct run_ctx {
    const char *model;  /* the file under test */
    const char *tensor; /* its first tensor's name */
    const char *header; /* `tensormap header --arrays` of it, for --from-header */
    char dir[256];      /* this run's own directory */
    char paths[MAX_ARGS][300];
    int n_paths;
} run_ctx;

static bool upper_word(const char *w, const char *what)
{
    return strcmp(w, what) == 0 || (strncmp(w, what, strlen(what)) == 0 &&
                                    (isdigit((unsigned char)w[strlen(what)]) || w[strlen(what)] == '_'));
}

static const char *fresh_path(run_ctx *x, const char *word)
{
    cr_assert_lt(x->n_paths, MAX_ARGS);
    char *p = x->paths[x->n_paths];
    /* an output file named .npy: dump can tell the format from it */
    snprintf(p, sizeof x->paths[0], "%s/out%d%s", x->dir, x->n_paths,
             upper_word(word, "DIR") ? "" : ".npy");
    x->n_paths++;
    return p;
}

/* The argument a placeholder stands for. */
static const char *value_for(run_ctx *x, const char *w)
{
    if (strchr(w, '=')) /* KEY=VALUE */
        return "general.name=x";
    if (strstr(w, ".json") || strstr(w, "HEADER"))
        return x->header;
    if (upper_word(w, "OUT") || upper_word(w, "DIR") || upper_word(w, "OUTPUT") ||
        upper_word(w, "PREFIX") || upper_word(w, "PATH") || strstr(w, ".npy"))
        return fresh_path(x, w);
    if (upper_word(w, "TENSOR") || upper_word(w, "NAME"))
        return x->tensor;
    if (upper_word(w, "KEY"))
        return "general.name";
    if (upper_word(w, "TYPE"))
        return "q8_0";
    if (strcmp(w, "A:B") == 0)
        return "0:1";
    if (strcmp(w, "X") == 0)
        return "0.5";
    if (upper_word(w, "N") || upper_word(w, "COUNT") || upper_word(w, "INDEX"))
        return "1";
    if (!isupper((unsigned char)w[0])) /* a literal choice, "raw" */
        return w;
    return x->model; /* FILE, A, B, MODEL, ... */
}

/* The argument list of one usage line: positionals from the placeholders (optional ones like
 * "[N]" too), options kept only when required (outside brackets), with their values. */
static int usage_args(run_ctx *x, command_doc *c, const char *usage, const char **argv)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", usage);
    int n = 0, depth = 0;
    bool value_next = false, keep_value = false;
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        bool optional = depth > 0 || w[0] == '[';
        for (const char *q = w; *q; q++)
            depth += (*q == '[') - (*q == ']');
        char word[128];
        snprintf(word, sizeof word, "%s", w + strspn(w, "["));
        word[strcspn(word, "]")] = '\0';
        if (!word[0] || strcmp(word, "...") == 0 || strcmp(word, "|") == 0)
            continue;
        cr_assert_lt(n, MAX_ARGS - 4);
        if (value_next) {
            value_next = false;
            if (keep_value)
                argv[n++] = value_for(x, word);
        } else if (word[0] == '-') {
            option_doc *o = find_opt(c, word);
            cr_assert_not_null(o, "%s: the usage line's %s is not documented", c->name, word);
            value_next = o->value[0] != '\0';
            keep_value = !optional;
            if (!optional) /* an optional one is covered by the runs of each option */
                argv[n++] = o->name;
        } else {
            argv[n++] = value_for(x, word);
        }
    }
    return n;
}

/* ---- the runs ------------------------------------------------------------------------------ */

static int failures;

/* Set by the hostile-strings test: every run's stdout and stderr are also searched for a byte
 * or character that a terminal would act on. */
static bool scan_output;

/* Where the first raw control is in s, described in why; NULL when there is none. Newline and
 * tab are the tool's own layout; anything else below 0x20, DEL, invalid UTF-8, a C1 control
 * (U+0080..U+009F) or a bidirectional control must have been escaped. */
static const char *raw_control(const char *s, size_t n, char *why, size_t size)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n; i++) {
        const unsigned c = p[i];
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
                   : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (len == 1 && (c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f)))
            continue;
        uint32_t cp = len == 1 ? c : len ? c & (0xffu >> (len + 1)) : 0;
        for (size_t k = 1; len && k < len; k++) {
            if (i + k >= n || (p[i + k] & 0xc0) != 0x80)
                len = 0;
            else
                cp = cp << 6 | (p[i + k] & 0x3fu);
        }
        if (len > 1 && !(cp >= 0x80 && cp <= 0x9f) && cp != 0x61c && cp != 0x200e &&
            cp != 0x200f && !(cp >= 0x202a && cp <= 0x202e) && !(cp >= 0x2066 && cp <= 0x2069)) {
            i += len - 1;
            continue;
        }
        snprintf(why, size, "byte %zu: %s%04X", i, len ? "raw U+" : "invalid UTF-8, byte 0x",
                 len ? (unsigned)cp : c);
        return why;
    }
    return NULL;
}

static void run_one(run_ctx *x, const char *cmd, const char **args, int n)
{
    const char *argv[MAX_ARGS + 2] = {cmd};
    for (int i = 0; i < n; i++)
        argv[i + 1] = args[i];
    argv[n + 1] = NULL;
    tool_result r = tool_run_in(x->dir, argv);
    bool sanitizer = strstr(r.err, "Sanitizer") || strstr(r.err, "runtime error:");
    char why[160] = "", where[8] = "";
    if (scan_output && raw_control(r.out, r.out_len, why, sizeof why))
        strcpy(where, "stdout");
    else if (scan_output && raw_control(r.err, strlen(r.err), why, sizeof why))
        strcpy(where, "stderr");
    if (r.status > 2 || sanitizer || where[0]) {
        char line[1024] = "tensormap";
        for (int i = 0; argv[i]; i++)
            snprintf(line + strlen(line), sizeof line - strlen(line), " %s", argv[i]);
        for (char *c = line; *c; c++) /* this log is read on a terminal too */
            *c = (unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f ? '?' : *c;
        cr_log_error("%s: exit %d%s %s %s\n%.2000s", line, r.status,
                     r.status > 128 ? " (a signal)" : "", where, why, r.err);
        failures++;
    }
    tool_result_free(&r);
}

/* A fresh directory for one run (inside the test's directory), and paths in it. */
static void fresh_dir(run_ctx *x, int *serial)
{
    snprintf(x->dir, sizeof x->dir, "%s/run%d", test_dir(), (*serial)++);
    cr_assert_eq(mkdir(x->dir, 0700), 0, "%s", x->dir);
    x->n_paths = 0;
}

static void run_command(command_doc *c, const char *model, const char *tensor, const char *header,
                        int *serial)
{
    run_ctx x = {.model = model, .tensor = tensor, .header = header};
    bool has_json = find_opt(c, "--json") != NULL;
    for (int u = 0; u < c->n_usages; u++) {
        /* the usage alone, then with each option (and its every choice), each with and
         * without --json */
        for (int o = -1; o < c->n_opts; o++) {
            if (o >= 0 && strcmp(c->opts[o].name, "--json") == 0)
                continue; /* every run is made with and without it */
            char values[MAX_VALUES][64] = {{0}};
            int n_values = 1;
            if (o >= 0 && c->opts[o].value[0]) {
                char choices[64];
                snprintf(choices, sizeof choices, "%s", c->opts[o].value);
                n_values = 0;
                for (char *s = NULL, *v = strtok_r(choices, "|", &s); v && n_values < MAX_VALUES;
                     v = strtok_r(NULL, "|", &s))
                    snprintf(values[n_values++], sizeof values[0], "%s", v);
            }
            for (int v = 0; v < n_values; v++) {
                for (int json = 0; json <= has_json; json++) {
                    fresh_dir(&x, serial);
                    const char *args[MAX_ARGS];
                    int n = 0;
                    if (json)
                        args[n++] = "--json";
                    if (o >= 0) {
                        args[n++] = c->opts[o].name;
                        if (c->opts[o].value[0])
                            args[n++] = value_for(&x, values[v]);
                    }
                    n += usage_args(&x, c, c->usages[u], args + n);
                    run_one(&x, c->name, args, n);
                }
            }
        }
        /* the options of every command (tensormap --help), after the arguments */
        static const char *const globals[] = {"--no-mmap", "--all-shards"};
        for (size_t g = 0; g < sizeof globals / sizeof globals[0]; g++) {
            fresh_dir(&x, serial);
            const char *args[MAX_ARGS];
            int n = usage_args(&x, c, c->usages[u], args);
            args[n++] = globals[g];
            run_one(&x, c->name, args, n);
        }
    }
}

/* The first tensor's name, and the header dumped with --arrays into the test's directory. */
static void prepare(const char *model, char *tensor, size_t size, char *header, size_t hsize,
                    int serial)
{
    json_t *t = tool_json(0, "tensors", "--json", model, NULL);
    const json_t *first = json_array_get(t, 0);
    const json_t *name = json_is_object(first) ? json_object_get(first, "name") : NULL;
    cr_assert(json_is_string(name), "%s: no first tensor name in tensors --json", model);
    snprintf(tensor, size, "%s", json_string_value(name));
    json_decref(t);
    tool_result r = tool_run("header", "--arrays", model, NULL);
    cr_assert_eq(r.status, 0, "header --arrays %s: %s", model, r.err);
    snprintf(header, hsize, "%s/header%d.json", test_dir(), serial);
    FILE *f = fopen(header, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(r.out, 1, r.out_len, f), r.out_len);
    fclose(f);
    tool_result_free(&r);
}

Test(cli_every, every_command_and_flag_on_the_demo_and_golden_files)
{
    command_doc *cmds = calloc(64, sizeof *cmds);
    cr_assert_not_null(cmds);
    int n = load_commands(cmds, 64);
    const char *corpus = getenv("TM_CORPUS"), *tool = getenv("TM_TOOL");
    cr_assert(corpus && tool, "TM_CORPUS and TM_TOOL are set by make");
    char models[3][512];
    snprintf(models[0], sizeof models[0], "%.*s/demo.gguf", (int)(strrchr(tool, '/') - tool),
             tool);
    snprintf(models[1], sizeof models[1], "%s/golden/golden-a.gguf", corpus);
    snprintf(models[2], sizeof models[2], "%s/golden/golden-b.gguf", corpus);
    int serial = 0, runs_before;
    for (int m = 0; m < 3; m++) {
        /* a copy: edit changes its FILE in place, and the corpus must never change */
        size_t len;
        char *bytes = read_all(models[m], &len);
        snprintf(models[m], sizeof models[m], "%s/model%d.gguf", test_dir(), m);
        FILE *copy = fopen(models[m], "wb");
        cr_assert(copy && fwrite(bytes, 1, len, copy) == len && fclose(copy) == 0);
        free(bytes);
        char tensor[256], header[512];
        prepare(models[m], tensor, sizeof tensor, header, sizeof header, m);
        for (int i = 0; i < n; i++) {
            runs_before = serial;
            run_command(&cmds[i], models[m], tensor, header, &serial);
            cr_assert_gt(serial, runs_before, "%s: not run", cmds[i].name);
        }
    }
    for (int i = 0; i < n; i++)
        free(cmds[i].help);
    free(cmds);
    cr_log_info("%d runs of %d commands", serial, n);
    cr_assert_eq(failures, 0, "%d runs crashed or reported a sanitizer error (above)", failures);
}

/* ---- hostile strings ------------------------------------------------------------------------
 * Keys, values, tensor names, the architecture, tokens and shard file names made of what a
 * terminal acts on: ESC sequences (title, clear screen), a lone CSI as C1 (U+009B), DEL, a
 * right-to-left override and an isolate, an invisible direction mark, and invalid UTF-8.
 * Every command, text and --json, must print all of it escaped. */

#define HOSTILE "\x1b]0;pwned\x07\x1b[2J\xc2\x9b" "31m\x7f\xe2\x80\xae\xe2\x81\xa6\xe2\x80\x8f\xd8\x9c"

static const char *hostile_gguf(void)
{
    const char *path = test_path("hostile.gguf");
    tm_writer *w;
    tm_error err;
    const uint64_t ne[2] = {32, 2};
    static float zeros[64];
    const char *tokens[3] = {"ok", HOSTILE, "bad\xff\xfe"};
    uint32_t blocks = 1;
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_kv_str(w, "general.architecture", HOSTILE, strlen(HOSTILE), &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(w, "general.name", HOSTILE "\xff", strlen(HOSTILE) + 1, &err),
                 TM_OK);
    /* the architecture's own keys are looked up by name: "HOSTILE.block_count" */
    cr_assert_eq(tm_writer_kv_scalar(w, HOSTILE ".block_count", TM_V_U32, &blocks, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(w, "key." HOSTILE "\xc3", "v", 1, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str_array(w, "tokenizer.ggml.tokens", tokens, NULL, 3, &err), TM_OK);
    /* the first tensor (the one every command is given) is valid UTF-8, for argv */
    cr_assert_eq(tm_writer_tensor(w, "blk.0." HOSTILE ".weight", TM_TYPE_F32, 2, ne, zeros, &err),
                 TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_tensor(w, "blk.1." HOSTILE "\xff.weight", TM_TYPE_F32, 2, ne, zeros,
                                  &err),
                 TM_OK, "%s", err.message);
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);
    return path;
}

/* A safetensors checkpoint in two shards, the second's file name hostile, tensor names and
 * metadata hostile; the index is the file the commands get. */
static const char *hostile_safetensors(void)
{
    static const float zeros[6];
    const uint64_t s23[2] = {2, 3};
    char one[256], two[256], index[256], json[1024];
    static const char shard2[] = "\x1b[2J\xc2\x9b\xe2\x80\xae.safetensors";
    snprintf(one, sizeof one, "%s", test_path("one.safetensors"));
    snprintf(two, sizeof two, "%s", test_path(shard2));
    snprintf(index, sizeof index, "%s", test_path("hostile.safetensors.index.json"));
    st_writer *w = st_writer_new();
    st_writer_meta(w, HOSTILE, HOSTILE);
    st_writer_add(w, "model.layers.0." HOSTILE, "F32", 2, s23, zeros, sizeof zeros);
    cr_assert_eq(st_writer_write(w, one), 0);
    st_writer_free(w);
    w = st_writer_new();
    st_writer_add(w, "model.layers.1." HOSTILE, "F32", 2, s23, zeros, sizeof zeros);
    cr_assert_eq(st_writer_write(w, two), 0);
    st_writer_free(w);
    /* the same strings, as JSON escapes */
#define J "\\u001b]0;pwned\\u0007\\u001b[2J\\u009b31m\\u007f\\u202e\\u2066\\u200f\\u061c"
    snprintf(json, sizeof json,
             "{\"metadata\": {\"" J "\": \"" J "\"}, \"weight_map\": {"
             "\"model.layers.0." J "\": \"one.safetensors\", "
             "\"model.layers.1." J "\": \"\\u001b[2J\\u009b\\u202e.safetensors\"}}");
#undef J
    cr_assert_eq(st_write_file(index, json, strlen(json)), 0);
    return test_path("hostile.safetensors.index.json");
}

Test(cli_every, every_command_prints_hostile_strings_escaped)
{
    command_doc *cmds = calloc(64, sizeof *cmds);
    cr_assert_not_null(cmds);
    int n = load_commands(cmds, 64);
    char models[2][512];
    snprintf(models[0], sizeof models[0], "%s", hostile_gguf());
    snprintf(models[1], sizeof models[1], "%s", hostile_safetensors());
    scan_output = true;
    int serial = 0;
    for (int m = 0; m < 2; m++) {
        char tensor[256], header[512];
        prepare(models[m], tensor, sizeof tensor, header, sizeof header, m);
        for (int i = 0; i < n; i++)
            run_command(&cmds[i], models[m], tensor, header, &serial);
    }
    for (int i = 0; i < n; i++)
        free(cmds[i].help);
    free(cmds);
    cr_log_info("%d runs of %d commands", serial, n);
    cr_assert_eq(failures, 0, "%d runs printed a raw control or crashed (above)", failures);
}
