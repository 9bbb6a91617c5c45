/* libFuzzer harness for the GGUF walk (fuzz_walk), with a structure-aware mutator: it finds
 * where the header's numeric fields lie (counts, lengths, type ids, dims, offsets, u32/u64
 * values such as general.alignment) and sets one to a value at a type extreme, or cuts the file
 * at a field boundary. Byte-level mutations alone rarely hit 2^64-1 in the one field where it
 * matters; these are the values behind the published GGUF reader CVEs. */
#include "walk.h"

#include <stdbool.h>
#include <string.h>

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

#define MAX_FIELDS 4096

typedef struct field {
    size_t at;
    unsigned width; /* 4 or 8 */
} field;

/* A reader over the input that never trusts a number: it records the fields it passes and
 * stops at the first one that does not fit. It is the mutator's own, independent of the
 * library under test. */
typedef struct reader {
    const uint8_t *d;
    size_t at, size;
    field *out;
    size_t n;
} reader;

static bool rd(reader *r, unsigned width, uint64_t *v)
{
    if (r->size - r->at < width)
        return false;
    uint8_t b[8] = {0};
    memcpy(b, r->d + r->at, width);
    *v = 0;
    for (unsigned i = width; i-- > 0;)
        *v = *v << 8 | b[i];
    if (r->n < MAX_FIELDS)
        r->out[r->n++] = (field){r->at, width};
    r->at += width;
    return true;
}

static bool skip(reader *r, uint64_t n)
{
    if (n > r->size - r->at)
        return false;
    r->at += (size_t)n;
    return true;
}

/* Bytes of one scalar of GGUF value type t; 0 for string, array, unknown. */
static unsigned scalar_size(uint64_t t)
{
    static const unsigned sizes[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < 13 ? sizes[t] : 0;
}

static bool value(reader *r, uint64_t type, bool in_array)
{
    uint64_t n, et, count;
    if (type == 8) /* string */
        return rd(r, 8, &n) && skip(r, n);
    if (type == 9 && !in_array) {
        if (!rd(r, 4, &et) || !rd(r, 8, &count))
            return false;
        if (et == 8) {
            for (uint64_t i = 0; i < count; i++)
                if (!value(r, et, true))
                    return false;
            return true;
        }
        unsigned es = scalar_size(et);
        return es && count <= (r->size - r->at) / es && skip(r, count * es);
    }
    unsigned s = scalar_size(type);
    if (s == 4 || s == 8)
        return rd(r, s, &n);
    return s && skip(r, s);
}

static size_t find_fields(const uint8_t *d, size_t size, field *out)
{
    reader r = {d, 4, size, out, 0};
    uint64_t version, n_tensors, n_kv, n, type, n_dims;
    if (size < 4 || !rd(&r, 4, &version) || !rd(&r, 8, &n_tensors) || !rd(&r, 8, &n_kv))
        return r.n;
    for (uint64_t i = 0; i < n_kv; i++)
        if (!rd(&r, 8, &n) || !skip(&r, n) || !rd(&r, 4, &type) || !value(&r, type, false))
            return r.n;
    for (uint64_t i = 0; i < n_tensors; i++) {
        if (!rd(&r, 8, &n) || !skip(&r, n) || !rd(&r, 4, &n_dims) || n_dims > 8)
            return r.n;
        for (uint64_t j = 0; j < n_dims; j++)
            if (!rd(&r, 8, &n))
                return r.n;
        if (!rd(&r, 4, &type) || !rd(&r, 8, &n))
            return r.n;
    }
    return r.n;
}

static uint64_t next(uint64_t *s) /* xorshift64 */
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static uint64_t extreme(uint64_t old, uint64_t pick)
{
    static const uint64_t values[] = {
        0, 1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 31, 32, 33, 63, 64, 255, 256, 65535, 65536,
        UINT64_C(1) << 31, UINT32_MAX, UINT64_C(1) << 32, UINT64_C(1) << 40, UINT64_C(1) << 62,
        UINT64_C(1) << 63, UINT64_MAX, UINT64_MAX - 3, UINT64_MAX - 31,
    };
    size_t n = sizeof values / sizeof values[0];
    switch (pick % (n + 4)) {
    case 0: return old + 1;
    case 1: return old - 1;
    case 2: return old * 2;
    case 3: return old | UINT64_C(1) << 63;
    default: return values[pick % (n + 4) - 4];
    }
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    static field fields[MAX_FIELDS];
    uint64_t s = seed | UINT64_C(1) << 32;
    if (next(&s) % 3 != 0)
        return LLVMFuzzerMutate(data, size, max_size);
    size_t n = find_fields(data, size, fields);
    if (n == 0)
        return LLVMFuzzerMutate(data, size, max_size);
    field f = fields[next(&s) % n];
    if (next(&s) % 8 == 0) /* a file cut inside or just after a field */
        return f.at + 1 + (size_t)(next(&s) % f.width);
    uint64_t old = 0;
    for (unsigned i = f.width; i-- > 0;)
        old = old << 8 | data[f.at + i];
    uint64_t v = extreme(old, next(&s));
    for (unsigned i = 0; i < f.width; i++, v >>= 8)
        data[f.at + i] = (uint8_t)v;
    return size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_walk(data, size);
    return 0;
}
