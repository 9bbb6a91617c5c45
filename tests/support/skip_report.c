/* Criterion's summary leaves a skipped test out of every count ("Tested: 707" says nothing of
 * the 103 that a CPU without AVX-512 skips), so a skip would pass unseen. After the run this
 * lists every reason a test was skipped for, how many tests gave it and the first of them.
 * Tests left out by --filter are not skips: Criterion marks them disabled. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <stdio.h>
#include <string.h>

#define MAX_REASONS 64

typedef struct reason {
    const char *message;
    const char *suite, *first;
    size_t tests;
} reason;

static bool skipped(const struct criterion_test_stats *t)
{
    return t->test_status == CR_STATUS_SKIPPED && !t->test->data->disabled;
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    reason reasons[MAX_REASONS];
    size_t n_reasons = 0, total = 0;
    for (struct criterion_suite_stats *s = stats->suites; s; s = s->next)
        for (struct criterion_test_stats *t = s->tests; t; t = t->next) {
            if (!skipped(t))
                continue;
            const char *why = t->message && *t->message ? t->message : "(no reason given)";
            size_t i = 0;
            while (i < n_reasons && strcmp(reasons[i].message, why) != 0)
                i++;
            if (i == n_reasons) {
                if (n_reasons == MAX_REASONS) { /* more reasons than the table: say each */
                    fprintf(stderr, "[SKIP] %s::%s: %s\n", s->suite->name, t->test->name, why);
                    total++;
                    continue;
                }
                reasons[n_reasons++] = (reason){why, s->suite->name, t->test->name, 0};
            }
            reasons[i].tests++;
            total++;
        }
    for (size_t i = 0; i < n_reasons; i++)
        fprintf(stderr, "[SKIP] %zu test%s (%s::%s%s): %s\n", reasons[i].tests,
                reasons[i].tests == 1 ? "" : "s", reasons[i].suite, reasons[i].first,
                reasons[i].tests == 1 ? "" : ", ...", reasons[i].message);
    if (total)
        fprintf(stderr, "[====] Skipped: %zu test%s, for the reasons above\n", total,
                total == 1 ? "" : "s");
    else
        fprintf(stderr, "[====] Skipped: none\n");
}
