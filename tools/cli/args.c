/* The command line: getopt with the tool's own messages, near-miss suggestions ("did you mean
 * --json?", a tensor name), argument counts and numbers. */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

int cli_usage(const cli_command *cmd)
{
    const char *nl = strchr(cmd->help, '\n');
    int len = nl ? (int)(nl - cmd->help) : (int)strlen(cmd->help);
    fprintf(stderr, "%.*s\n(tensormap help %s for more)\n", len, cmd->help, cmd->name);
    return CLI_USAGE;
}

/* Edit distance (insert, delete, replace, swap two neighbours) between a and b, stopping at
 * 9: a suggestion is only worth making for a near miss. */
static size_t edit_distance(const char *a, const char *b)
{
    enum { MAX = 40 };
    size_t la = strlen(a), lb = strlen(b);
    if (la >= MAX || lb >= MAX)
        return 9;
    size_t d[MAX + 1][MAX + 1];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb] < 9 ? d[la][lb] : 9;
}

const char *cli_nearest(const char *word, const char *const *names, size_t n)
{
    const char *best = NULL;
    size_t best_d = strlen(word) <= 3 ? 1 : 2; /* the most a near miss may differ by */
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(word, names[i]);
        if (d <= best_d && (!best || d < best_d)) {
            best = names[i];
            best_d = d;
        }
    }
    return best;
}

/* The option names of opts that start with s (s without dashes, up to '='). */
static size_t options_starting(const struct option *opts, const char *s, size_t len,
                               const char **names, size_t max)
{
    size_t n = 0;
    for (const struct option *o = opts; o->name; o++)
        if (strncmp(o->name, s, len) == 0 && n < max)
            names[n++] = o->name;
    return n;
}

/* Why argv's option at optind - 1 was refused, said once on stderr. */
static void option_error(const cli_command *cmd, const char *arg, int missing,
                         const struct option *opts)
{
    if (strncmp(arg, "--", 2) != 0) { /* a short option: "-x" or "-xVALUE" */
        const char o = optopt ? (char)optopt : arg[1];
        if (missing)
            cli_errorf("%s: -%c needs a value", cmd->name, o);
        else
            cli_errorf("%s: there is no option '-%c'", cmd->name, o);
        return;
    }
    const char *name = arg + 2;
    size_t len = strcspn(name, "=");
    const char *hits[8];
    size_t n_hits = options_starting(opts, name, len, hits, 8);
    const struct option *exact = NULL;
    for (const struct option *o = opts; o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
            exact = o;
    if (missing) {
        cli_errorf("%s: --%.*s needs a value", cmd->name, (int)len, name);
    } else if (exact || (n_hits == 1 && name[len] == '=')) {
        cli_errorf("%s: --%.*s takes no value ('%s')", cmd->name, (int)len, name, arg);
    } else if (n_hits > 1) {
        char list[256] = "";
        for (size_t i = 0; i < n_hits; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s--%s",
                     i ? ", " : "", hits[i]);
        cli_errorf("%s: '%s' is short for more than one option: %s", cmd->name, arg, list);
    } else {
        const char *names[64];
        size_t n = 0;
        for (const struct option *o = opts; o->name && n < 64; o++)
            names[n++] = o->name;
        char word[64];
        snprintf(word, sizeof word, "%.*s", (int)(len < 63 ? len : 63), name);
        const char *near = cli_nearest(word, names, n);
        if (near)
            cli_errorf("%s: there is no option '%s' (did you mean --%s?)", cmd->name, arg, near);
        else
            cli_errorf("%s: there is no option '%s' (tensormap help %s lists them)", cmd->name,
                       arg, cmd->name);
    }
}

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *opts,
               const cli_command *cmd)
{
    /* ':' first: a missing value is told apart from an unknown option; opterr off: the
     * messages are ours, with the reason and a suggestion */
    char shorts[32] = ":";
    snprintf(shorts + 1, sizeof shorts - 1, "%s", shortopts);
    opterr = 0;
    int c = getopt_long(argc, argv, shorts, opts, NULL);
    if (c == '?' || c == ':') {
        option_error(cmd, argv[optind - 1], c == ':', opts);
        return '?';
    }
    return c;
}

int cli_flag_args(int argc, char **argv, const cli_command *cmd, const cli_flag *flags, int min,
                  int max, int *first)
{
    int n = 0;
    while (flags && flags[n].name)
        n++;
    int help = n;
    struct option *opts = calloc((size_t)n + 2, sizeof *opts);
    if (!opts) {
        cli_errorf("out of memory");
        return CLI_FAIL;
    }
    for (int i = 0; i < n; i++)
        opts[i] = (struct option){flags[i].name, no_argument, NULL, i};
    opts[n] = (struct option){"help", no_argument, NULL, help};
    optind = 1;
    int c, rc = -1;
    while (rc < 0 && (c = cli_getopt(argc, argv, "h", opts, cmd)) != -1) {
        if (c == help || c == 'h')
            rc = (fputs(cmd->help, stdout), CLI_OK);
        else if (c >= 0 && c < n)
            *flags[c].set = true;
        else
            rc = cli_usage(cmd);
    }
    free(opts);
    if (rc >= 0)
        return rc;
    rc = cli_count_args(cmd, argc - optind, min, max);
    if (rc >= 0)
        return rc;
    *first = optind;
    return -1;
}

int cli_simple_args(int argc, char **argv, const cli_command *cmd, const cli_flag *flags,
                    const char **file)
{
    int first;
    int rc = cli_flag_args(argc, argv, cmd, flags, 1, 1, &first);
    if (rc < 0)
        *file = argv[first];
    return rc;
}

int cli_count_args(const cli_command *cmd, int have, int min, int max)
{
    if (have >= min && have <= max)
        return -1;
    if (have < min)
        cli_errorf("%s: %s", cmd->name,
                   have == 0 ? "no FILE given" : "an argument is missing (see the usage line)");
    else
        cli_errorf("%s: %d argument%s too many (see the usage line)", cmd->name, have - max,
                   have - max == 1 ? "" : "s");
    return cli_usage(cmd);
}

const tm_tensor *cli_find_tensor(const tm_file *f, const char *file, const char *name)
{
    const tm_tensor *t = tm_tensor_find(f, name);
    if (t)
        return t;
    /* the nearest name by edit distance, looked for among names of about the same length */
    const tm_str *near = NULL;
    size_t want = strlen(name), best = want <= 3 ? 1 : 3;
    char cand[128];
    for (uint64_t i = 0; i < tm_n_tensors(f); i++) {
        const tm_str *s = &tm_tensor_at(f, i)->name;
        if (s->len >= sizeof cand || s->len > want + best || want > s->len + best)
            continue;
        memcpy(cand, s->ptr, (size_t)s->len);
        cand[s->len] = '\0';
        size_t d = edit_distance(name, cand);
        if (d <= best && (!near || d < best)) {
            best = d;
            near = s;
        }
    }
    char shown[160];
    if (near)
        cli_errorf("%s: no tensor '%s' (did you mean '%s'?)", file, name,
                   cli_name(*near, 120, shown, sizeof shown));
    else
        cli_errorf("%s: no tensor '%s' (tensormap tensors %s lists them)", file, name, file);
    return NULL;
}

bool cli_parse_u64(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return true;
}
