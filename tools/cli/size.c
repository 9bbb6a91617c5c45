/* Sizes on the command line (--max-size, --max-shard-size), one reading for every command.
 *
 * What Hugging Face accepts for max_shard_size (huggingface_hub's parse_size_to_int, which
 * save_pretrained and split_torch_state_dict_into_shards call): an int of bytes, or a string
 * whose last two characters are KB, MB, GB or TB in any case (powers of 1000), the rest a
 * Python float, blanks allowed around it, truncated to whole bytes ("1.5GB" is 1,500,000,000).
 * transformers' older convert_file_size_to_int also took KiB, MiB and GiB (powers of 1024).
 * gguf-split takes K, M and G (powers of 1000).
 *
 * So a size here is digits, optionally a '.' and more digits, optional blanks, and a unit from
 * the table (any case), or none for bytes; the value is truncated to whole bytes, exactly (no
 * float rounding), and must be above 0 and fit 64 bits. Not taken: signs, exponents, "inf",
 * Python's digit separators, and the old transformers reading of a lower-case b as bits. */
#include "cli.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    uint64_t bytes;
} units[] = {
    {"", 1},
    {"KB", 1000},          {"MB", 1000000},        {"GB", 1000000000},
    {"TB", 1000000000000}, {"K", 1000},            {"M", 1000000},
    {"G", 1000000000},     {"T", 1000000000000},   {"KiB", (uint64_t)1 << 10},
    {"MiB", (uint64_t)1 << 20}, {"GiB", (uint64_t)1 << 30}, {"TiB", (uint64_t)1 << 40},
};

/* floor(unit * 0.DIGITS) for the n digits at s, exactly: digits from the last, each step
 * floor((d * unit + carry) / 10), since nested floors of divisions compose. No step exceeds
 * 10 * unit, far inside 64 bits. */
static uint64_t fraction_of(uint64_t unit, const char *s, size_t n)
{
    uint64_t carry = 0;
    while (n-- > 0)
        carry = ((uint64_t)(s[n] - '0') * unit + carry) / 10;
    return carry;
}

bool cli_parse_size(const char *s, uint64_t *out)
{
    uint64_t whole = 0;
    const char *p = s;
    while (*p == ' ' || *p == '\t')
        p++;
    const char *digits = p;
    for (; isdigit((unsigned char)*p); p++)
        if (__builtin_mul_overflow(whole, 10, &whole) ||
            __builtin_add_overflow(whole, (uint64_t)(*p - '0'), &whole))
            return false;
    const char *frac = *p == '.' ? p + 1 : p, *frac_end = frac;
    while (isdigit((unsigned char)*frac_end))
        frac_end++;
    if (p == digits && frac_end == frac) /* no digit at all */
        return false;
    p = frac_end;
    while (*p == ' ' || *p == '\t')
        p++;
    const char *end = p + strlen(p);
    while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strlen(units[i].name) != (size_t)(end - p) ||
            strncasecmp(p, units[i].name, (size_t)(end - p)) != 0)
            continue;
        uint64_t v;
        return !__builtin_mul_overflow(whole, units[i].bytes, &v) &&
               !__builtin_add_overflow(v, fraction_of(units[i].bytes, frac,
                                                      (size_t)(frac_end - frac)), &v) &&
               v > 0 && (*out = v, true);
    }
    return false;
}
