/* Name -> tensor and key -> entry: open-addressing hashes built once at open, O(1) lookups. */
#include "../common/internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

/* The hash must resist a crafted file: with a fixed, public function an attacker can make
 * 80,000 keys share one slot and turn the duplicate check quadratic (what ggml's loop is by
 * construction). So the mixer is keyed with a per-process random seed, and it folds 8-byte
 * words through a 64x64->128 multiply (wyhash's "mum"), which has no seed-independent
 * collisions of the kind FNV and Murmur2 have. Lookups and the build run in one process, so
 * the seed only has to be stable for the process's life. */
static _Atomic uint64_t hash_seed;

__extension__ typedef unsigned __int128 u128; /* GCC and Clang on 64-bit targets */

static uint64_t mum(uint64_t a, uint64_t b)
{
    const u128 r = (u128)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static uint64_t seed(void)
{
    uint64_t s = atomic_load_explicit(&hash_seed, memory_order_relaxed);
    if (s)
        return s;
    uint64_t fresh = 0;
    if (getrandom(&fresh, sizeof fresh, GRND_NONBLOCK) != (ssize_t)sizeof fresh) {
        struct timespec ts; /* no entropy yet (early boot): time and ASLR still vary */
        clock_gettime(CLOCK_MONOTONIC, &ts);
        fresh = mum((uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)&ts, 0x9e3779b97f4a7c15u);
    }
    fresh |= 1; /* 0 means "not yet chosen" */
    uint64_t expected = 0;
    /* Two threads may race here: the first to store wins and both use its value. */
    if (!atomic_compare_exchange_strong(&hash_seed, &expected, fresh))
        return expected;
    return fresh;
}

uint64_t tm__hash_bytes(const char *s, uint64_t len)
{
    const uint8_t *p = (const uint8_t *)s;
    const uint64_t k0 = 0xa0761d6478bd642fu, k1 = 0xe7037ed1a0b428dbu;
    uint64_t h = seed() ^ mum(len ^ k0, k1);
    for (; len >= 8; len -= 8, p += 8)
        h = mum(h ^ tm__load_le(p, 8), k1 ^ len);
    return mum(h ^ tm__load_le(p, (unsigned)len) ^ k0, k1 ^ len);
}

tm_status tm__hash_init(tm__hash *h, uint64_t n, tm_error *err)
{
    uint64_t cap = 2; /* load <= 0.5: a probe run ends at an empty slot soon */
    while (cap < 2 * n)
        cap *= 2;
    h->slots = calloc((size_t)cap, sizeof *h->slots);
    if (!h->slots)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory indexing %" PRIu64 " names",
                        (uint64_t)n);
    h->mask = cap - 1;
    return TM_OK;
}

void tm__hash_free(tm__hash *h)
{
    free(h->slots);
    h->slots = NULL;
    h->mask = 0;
}

/* The name of entry i of a table, so one probe loop serves keys and tensor names. */
typedef tm_str (*name_of)(const tm_file *f, uint32_t i);
static tm_str kv_name(const tm_file *f, uint32_t i) { return f->kvs[i].key; }
static tm_str tensor_name(const tm_file *f, uint32_t i) { return f->tensors[i].name; }

/* The slot holding name, or the empty slot where it would go. */
static uint32_t *probe(const tm_file *f, const tm__hash *h, name_of name, const char *s,
                       uint64_t len)
{
    for (uint64_t i = tm__hash_bytes(s, len) & h->mask;; i = (i + 1) & h->mask) {
        uint32_t *slot = &h->slots[i];
        if (*slot == 0)
            return slot;
        tm_str other = name(f, *slot - 1);
        if (other.len == len && memcmp(other.ptr, s, (size_t)len) == 0)
            return slot;
    }
}

static tm_status build(tm_file *f, tm__hash *h, uint64_t n, name_of name, const char *what,
                       tm_error *err)
{
    if (n >= UINT32_MAX) /* slots hold index + 1 in 32 bits; the parsers bound n far lower */
        return tm__fail(err, TM_LIMIT, TM_NO_OFFSET,
                        "%" PRIu64 " %s are more than this library indexes", (uint64_t)n, what);
    tm_status st = tm__hash_init(h, n, err);
    if (st != TM_OK)
        return st;
    for (uint32_t i = 0; i < n; i++) {
        tm_str s = name(f, i);
        uint32_t *slot = probe(f, h, name, s.ptr, s.len);
        if (*slot) {
            const bool is_kv = name == kv_name;
            char q[96];
            tm__quote(q, sizeof q, s.ptr, s.len);
            uint64_t at = is_kv ? f->kvs[i].offset : f->tensors[i].info_offset;
            const uint32_t shard = is_kv ? 0 : f->tensors[i].shard;
            const uint32_t other = is_kv ? 0 : f->tensors[*slot - 1].shard;
            if (shard != other) /* a name in two files of a set: say which files */
                return tm__fail(err, TM_DUPLICATE, at,
                                "%s: tensor info at byte %" PRIu64
                                " names tensor %s, which %s already "
                                "holds",
                                tm_shard_path(f, shard), (uint64_t)at, q, tm_shard_path(f, other));
            return tm__fail(err, TM_DUPLICATE, at,
                            "%s %u of %" PRIu64 " (%s) at byte %" PRIu64 ": the same %s as %s %u",
                            is_kv ? "metadata entry" : "tensor info", i, (uint64_t)n, q,
                            (uint64_t)at, is_kv ? "key" : "name", is_kv ? "entry" : "tensor info",
                            *slot - 1);
        }
        *slot = i + 1;
    }
    return TM_OK;
}

tm_status tm__index_build(tm_file *f, tm_error *err)
{
    tm_status st = build(f, &f->kv_index, f->layout.n_kv, kv_name, "metadata entries", err);
    if (st == TM_OK)
        st = build(f, &f->tensor_index, f->layout.n_tensors, tensor_name, "tensors", err);
    return st;
}

const tm_kv *tm_kv_findn(const tm_file *f, const char *key, size_t len)
{
    if (!f || !key || !f->kv_index.slots)
        return NULL;
    uint32_t slot = *probe(f, &f->kv_index, kv_name, key, len);
    return slot ? &f->kvs[slot - 1] : NULL;
}

const tm_kv *tm_kv_find(const tm_file *f, const char *key)
{
    return key ? tm_kv_findn(f, key, strlen(key)) : NULL;
}

const tm_tensor *tm_tensor_findn(const tm_file *f, const char *name, size_t len)
{
    if (!f || !name || !f->tensor_index.slots)
        return NULL;
    uint32_t slot = *probe(f, &f->tensor_index, tensor_name, name, len);
    return slot ? &f->tensors[slot - 1] : NULL;
}

const tm_tensor *tm_tensor_find(const tm_file *f, const char *name)
{
    return name ? tm_tensor_findn(f, name, strlen(name)) : NULL;
}
