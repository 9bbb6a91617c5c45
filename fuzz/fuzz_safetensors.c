/* libFuzzer harness for the safetensors walk (fuzz_walk: tm_open_buffer dispatches on the
 * content), with a structure-aware mutator: it replaces one number of the JSON header (a
 * shape dimension or a data offset) with a decimal at an integer extreme, keeping the u64
 * header length consistent, or sets that length itself to an extreme. */
#include "walk.h"

#include <string.h>

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

static const char *const numbers[] = {
    "0", "1", "2", "-1", "4294967295", "4294967296", "2147483648", "9223372036854775807",
    "9223372036854775808", "18446744073709551615", "18446744073709551616", "1e400", "0.5",
    "-9223372036854775809", "100000000", "3",
};

static uint64_t next(uint64_t *s) /* xorshift64 */
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (unsigned i = 8; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (unsigned i = 0; i < 8; i++, v >>= 8)
        p[i] = (uint8_t)v;
}

static int digit(uint8_t c) { return c >= '0' && c <= '9'; }

/* Replace a random run of digits (with its sign) in the header by one of numbers[]; 0 when
 * there is none or it would not fit in max_size. */
static size_t replace_number(uint8_t *data, size_t size, size_t max_size, uint64_t *s)
{
    uint64_t hlen = get_u64(data);
    int consistent = hlen <= size - 8; /* then keep the length covering the header */
    size_t end = consistent ? 8 + (size_t)hlen : size, runs = 0, at = 0, j;
    for (size_t i = 9; i < end; i++)
        runs += digit(data[i]) && !digit(data[i - 1]);
    if (runs == 0)
        return 0;
    size_t want = (size_t)(next(s) % runs) + 1;
    for (size_t i = 9; i < end && want; i++)
        if (digit(data[i]) && !digit(data[i - 1]) && --want == 0)
            at = i;
    for (j = at; j < end && digit(data[j]); j++)
        ;
    if (at > 8 && data[at - 1] == '-')
        at--;
    size_t len = j - at;
    const char *rep = numbers[next(s) % (sizeof numbers / sizeof numbers[0])];
    size_t rlen = strlen(rep);
    if (size - len + rlen > max_size)
        return 0;
    memmove(data + at + rlen, data + j, size - j);
    memcpy(data + at, rep, rlen);
    if (consistent)
        put_u64(data, hlen + rlen - len);
    return size + rlen - len;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    uint64_t s = seed | UINT64_C(1) << 32;
    uint64_t r = next(&s) % 8;
    if (size > 9 && r < 3) {
        size_t n = replace_number(data, size, max_size, &s);
        if (n)
            return n;
    } else if (size >= 8 && r == 3) {
        static const uint64_t lens[] = {0, 1, 2, UINT32_MAX, UINT64_C(1) << 63, UINT64_MAX,
                                        100000001, UINT64_MAX - 7};
        uint64_t k = next(&s) % 10;
        put_u64(data, k < 8 ? lens[k] : get_u64(data) + (k == 8 ? 1 : UINT64_MAX));
        return size;
    }
    return LLVMFuzzerMutate(data, size, max_size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_walk(data, size);
    return 0;
}
