/* Small things every part may use that are neither errors nor types: the version, and byte
 * counts read from the environment. */
#include "internal.h"

#include <stdlib.h>

const char *tm_version(void) { return TM_VERSION_STRING; }

uint64_t tm__env_bytes(const char *name, uint64_t dflt)
{
    const char *e = getenv(name);
    char *end;
    if (!e || !*e)
        return dflt;
    unsigned long long v = strtoull(e, &end, 10);
    unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (end == e || (shift && end[1]) || (!shift && *end) || v > (UINT64_MAX >> shift))
        return dflt; /* not a number: the default, not "no limit" */
    return (uint64_t)v << shift;
}
