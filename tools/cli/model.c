/* The numbers people ask of a model first: how many parameters, how many bits a weight takes,
 * and byte counts in words. Everything is counted from the file (tensor shapes and types); the
 * memory at a context is tools/cli/memory.c's. */
#include "cli.h"

#include <inttypes.h>
#include <string.h>

void cli_count_weights(const tm_file *f, cli_weights *w)
{
    memset(w, 0, sizeof *w);
    for (uint64_t i = 0; i < tm_n_tensors(f); i++) {
        const tm_tensor *t = tm_tensor_at(f, i);
        w->params += t->n_elements;
        w->bytes += t->n_bytes;
        size_t k = 0;
        while (k < w->n_types && w->types[k].type != t->type)
            k++;
        if (k == w->n_types) {
            if (k == CLI_MAX_TYPES)
                continue; /* more distinct types than any file has: the total still counts */
            w->types[w->n_types++].type = t->type;
        }
        w->types[k].tensors++;
        w->types[k].weights += t->n_elements;
        w->types[k].bytes += t->n_bytes;
    }
}

void cli_grouped(uint64_t n, char *buf, size_t size)
{
    char digits[24];
    int len = snprintf(digits, sizeof digits, "%" PRIu64, n);
    size_t at = 0;
    for (int i = 0; i < len && at + 2 < size; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            buf[at++] = ',';
        buf[at++] = digits[i];
    }
    buf[at] = '\0';
}

void cli_count_words(uint64_t n, char *buf, size_t size)
{
    static const char *const units[] = {"K", "M", "B", "T"};
    if (n < 1000) {
        snprintf(buf, size, "%" PRIu64, n);
        return;
    }
    double v = (double)n;
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
        v /= 1000;
        /* three significant digits; 999.6 K rounds to 1e+03 and is said as 1 M instead */
        snprintf(buf, size, "%.3g %s", v, units[u]);
        if (!strchr(buf, 'e'))
            return;
    }
    snprintf(buf, size, "%.3g T", (double)n / 1e12);
}

void cli_bytes_words(uint64_t n, char *buf, size_t size)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (n < 1024) {
        snprintf(buf, size, "%" PRIu64 " byte%s", n, CLI_S(n));
        return;
    }
    double v = (double)n;
    size_t u = 0;
    for (v /= 1024; v >= 1023.5 && u + 1 < sizeof units / sizeof units[0]; u++)
        v /= 1024;
    snprintf(buf, size, "%.3g %s", v, units[u]);
}
