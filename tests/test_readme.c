/* Every `$ tensormap ...` example in README.md, run in a fresh directory holding
 * build/demo.gguf (a link to the demo model the build writes) and examples/ (a link to the
 * checkout's, for the model headers the memory examples rebuild), through sh with the built tool
 * first on PATH, in the README's order (an example may use a file an earlier one wrote). Its
 * standard output must be the lines the README shows under it. A line that is only "…" marks a
 * cut: the shown lines on either side of it must appear in that order, anything may stand in
 * the cut. Without a cut at the start or end, the output must start or end as shown. Trailing
 * spaces are not compared. The hf: examples go to the local test server (tests/support/http_server.py),
 * which serves the demo model as the Hub would serve tensormap/demo/demo.gguf: HF_ENDPOINT
 * points at it. */
#include "support/http_serve.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(readme, .fini = test_cleanup);

enum { MAX_LINES = 4096 };

typedef struct lines {
    char *v[MAX_LINES];
    size_t n;
} lines;

static void push(lines *l, const char *s, size_t len)
{
    cr_assert_lt(l->n, MAX_LINES);
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\r'))
        len--;
    l->v[l->n++] = strndup(s, len);
}

static void split(lines *l, const char *text)
{
    l->n = 0;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        push(l, p, len);
        p += len + (nl != NULL);
    }
}

static void release(lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    l->n = 0;
}

static bool is_cut(const char *s)
{
    s += strspn(s, " ");
    return strcmp(s, "\u2026") == 0;
}

static bool segment_at(const lines *got, size_t at, const lines *want, size_t w0, size_t w1)
{
    if (at + (w1 - w0) > got->n)
        return false;
    for (size_t k = w0; k < w1; k++)
        if (strcmp(got->v[at + k - w0], want->v[k]) != 0)
            return false;
    return true;
}

/* Whether got is what want shows, "…" lines being cuts. */
static bool matches(const lines *got, const lines *want)
{
    size_t pos = 0, w = 0;
    bool cut_before = false;
    while (w < want->n) {
        if (is_cut(want->v[w])) {
            cut_before = true;
            w++;
            continue;
        }
        size_t end = w;
        while (end < want->n && !is_cut(want->v[end]))
            end++;
        size_t at = pos;
        if (cut_before)
            while (at < got->n && !segment_at(got, at, want, w, end))
                at++;
        if (!segment_at(got, at, want, w, end))
            return false;
        pos = at + (end - w);
        w = end;
        cut_before = false;
    }
    return cut_before || pos == got->n;
}

static char *run_shell(const char *dir, const char *cmd)
{
    char *full = NULL;
    int status; /* not compared: an example may show a refusal */
    cr_assert_gt(asprintf(&full, "cd '%s' && %s 2>/dev/null", dir, cmd), 0);
    char *out = shell_output(full, &status);
    free(full);
    return out;
}

Test(readme, every_tensormap_example_prints_what_the_readme_shows)
{
    const char *readme = getenv("TM_README"), *tool = getenv("TM_TOOL");
    cr_assert(readme && tool, "TM_README and TM_TOOL are set by make");
    char *text = read_all(readme, NULL);
    static lines doc, want, got;
    split(&doc, text);
    free(text);

    /* the tool's directory first on PATH; the demo model where the examples name it */
    char tooldir[1024], path[4096], link[1200], target[1200];
    snprintf(tooldir, sizeof tooldir, "%.*s", (int)(strrchr(tool, '/') - tool), tool);
    snprintf(path, sizeof path, "%s:%s", tooldir, getenv("PATH") ? getenv("PATH") : "/usr/bin");
    setenv("PATH", path, 1);
    const char *dir = test_dir();
    snprintf(link, sizeof link, "%s/build", dir);
    cr_assert_eq(mkdir(link, 0700), 0);
    snprintf(link, sizeof link, "%s/build/demo.gguf", dir);
    snprintf(target, sizeof target, "%s/demo.gguf", tooldir);
    cr_assert_eq(symlink(target, link), 0);
    snprintf(link, sizeof link, "%s/examples", dir);
    cr_assert(strrchr(readme, '/'), "TM_README is a path: %s", readme);
    snprintf(target, sizeof target, "%.*s/examples", (int)(strrchr(readme, '/') - readme), readme);
    cr_assert_eq(symlink(target, link), 0);
    snprintf(target, sizeof target, "%s/demo.gguf", tooldir);

    /* the Hub's stand-in: ROOT/hf/OWNER/REPO/REVISION/FILE is what hf:OWNER/REPO/FILE serves */
    static server hub;
    char root[1200], copy[1400], url[64], sh[4400];
    snprintf(root, sizeof root, "%s/www", dir);
    snprintf(copy, sizeof copy, "%s/hf/tensormap/demo/main", root);
    snprintf(sh, sizeof sh, "mkdir -p '%s' && cp '%s' '%s/demo.gguf'", copy, target, copy);
    cr_assert_eq(system(sh), 0, "%s", sh);
    clean_environment();
    char *failed_start = server_try_start(&hub, root, "hub", NULL, NULL);
    cr_assert_null(failed_start, "the local Hub for the hf: examples: %s", failed_start);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", hub.port);
    setenv("HF_ENDPOINT", url, 1);

    int examples = 0, failed = 0;
    bool fenced = false;
    for (size_t i = 0; i < doc.n; i++) {
        const char *line = doc.v[i];
        if (strncmp(line, "```", 3) == 0) {
            fenced = !fenced;
            continue;
        }
        /* "$ tensormap" in a fenced block, or in a block indented by four spaces */
        size_t indent = fenced ? 0 : strspn(line, " ");
        if ((!fenced && indent != 4) || strncmp(line + indent, "$ tensormap ", 12) != 0)
            continue;
        const char *cmd = line + indent + 2;
        release(&want);
        size_t j = i + 1;
        for (; j < doc.n; j++) {
            const char *o = doc.v[j];
            if (fenced ? strncmp(o, "```", 3) == 0 || strncmp(o, "$ ", 2) == 0
                       : (o[0] && strncmp(o, "    ", 4) != 0) || strncmp(o + strspn(o, " "), "$ ", 2) == 0)
                break;
            push(&want, o + (fenced ? 0 : strspn(o, " ") < 4 ? strspn(o, " ") : 4), strlen(o) -
                                                (fenced ? 0 : strspn(o, " ") < 4 ? strspn(o, " ") : 4));
        }
        while (want.n && want.v[want.n - 1][0] == '\0')
            free(want.v[--want.n]);
        char *out = run_shell(dir, cmd);
        release(&got);
        split(&got, out);
        if (!matches(&got, &want)) {
            failed++;
            cr_log_error("README.md line %zu: $ %s\n--- the README shows:\n", i + 1, cmd);
            for (size_t k = 0; k < want.n; k++)
                cr_log_error("%s", want.v[k]);
            cr_log_error("--- the tool prints:\n%s", out);
        }
        free(out);
        examples++;
        i = j - 1;
    }
    server_stop(&hub);
    release(&doc);
    release(&want);
    release(&got);
    cr_assert_geq(examples, 12, "only %d examples found in README.md", examples);
    cr_assert_eq(failed, 0, "%d of %d README examples print something else (above)", failed,
                 examples);
}
