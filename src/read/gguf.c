/* GGUF files: one file's image (walked by gguf_walk.c) becomes the index, or, for the first
 * shard of a split set, the images of all its shards are walked, checked against each other and
 * joined into one index. */
#include "gguf_walk.h"

#include <stdio.h>
#include <stdlib.h>

typedef unsigned long long ull; /* for printf */

/* The name this file has always used for tm__gguf_image. */
typedef tm__gguf_image image;

/* ---- split sets --------------------------------------------------------------------------
 * llama.cpp's gguf-split writes PREFIX-00001-of-0000N.gguf ... PREFIX-0000N-of-0000N.gguf, each a
 * complete GGUF file carrying split.no (u16, from 0), split.count (u16) and split.tensors.count
 * (i32, the tensors of the whole set). The model's metadata is in the first shard only (the
 * others carry only the split.* keys, which are checked and then dropped), and the first shard
 * may hold no tensors. Files written before the keys were renamed use general.split (or
 * general.split_no), general.split_count and general.split_tensors_count. */

enum { SPLIT_NO, SPLIT_COUNT, SPLIT_TENSORS, N_SPLIT_KEYS };
static const char *const split_names[N_SPLIT_KEYS][3] = {
    {"split.no", "general.split_no", "general.split"},
    {"split.count", "general.split_count", NULL},
    {"split.tensors.count", "general.split_tensors_count", NULL},
};
/* Shard numbers are u16 in the format and 5 digits in the names. */
#define MAX_SPLIT_COUNT 65535u

typedef struct split_keys {
    const tm_kv *kv[N_SPLIT_KEYS]; /* NULL when absent */
    uint64_t v[N_SPLIT_KEYS];
} split_keys;

static const tm_kv *image_kv(const image *img, const char *key)
{
    const size_t len = strlen(key);
    for (uint64_t i = 0; i < img->lay.n_kv; i++)
        if (img->kvs[i].key.len == len && memcmp(img->kvs[i].key.ptr, key, len) == 0)
            return &img->kvs[i];
    return NULL;
}

/* The split.* keys of a shard, by either name; path names the file in a refusal. */
static tm_status read_split_keys(const image *img, const char *path, split_keys *k,
                                 tm_error *err)
{
    for (int i = 0; i < N_SPLIT_KEYS; i++) {
        k->kv[i] = NULL;
        k->v[i] = 0;
        for (int n = 0; n < 3 && split_names[i][n] && !k->kv[i]; n++)
            k->kv[i] = image_kv(img, split_names[i][n]);
        if (k->kv[i] && tm_kv_get_uint(k->kv[i], &k->v[i]) != TM_OK) {
            char q[96];
            tm__quote(q, sizeof q, k->kv[i]->key.ptr, k->kv[i]->key.len);
            return tm__fail(err, TM_BAD_VALUE, k->kv[i]->offset,
                            "%s: %s (entry at byte %llu) is a %s; a split set's numbers are "
                            "non-negative integers",
                            path, q, (ull)k->kv[i]->offset,
                            tm_vtype_name(k->kv[i]->type) ? tm_vtype_name(k->kv[i]->type) : "?");
        }
    }
    return TM_OK;
}

/* A split key in a message: "split.count = 3 (entry at byte 1234)". */
static const char *key_said(char *buf, size_t cap, const split_keys *k, int i)
{
    char q[96];
    tm__quote(q, sizeof q, k->kv[i]->key.ptr, k->kv[i]->key.len);
    snprintf(buf, cap, "%s = %llu (entry at byte %llu)", q, (ull)k->v[i], (ull)k->kv[i]->offset);
    return buf;
}

/* "PREFIX-00002-of-00003.gguf": the prefix's length and the two numbers. */
static bool parse_split_name(const char *path, size_t *prefix_len, uint64_t *no, uint64_t *count)
{
    const size_t len = strlen(path);
    const char *base = tm__shard_basename(path);
    if (len < 5 || strcmp(path + len - 5, ".gguf") != 0)
        return false;
    size_t end = len - 5, digits = 0;
    uint64_t nums[2] = {0, 0};
    for (int n = 1; n >= 0; n--) {
        for (digits = 0; end > 0 && path[end - 1] >= '0' && path[end - 1] <= '9' && digits < 9;
             digits++, end--)
            ;
        if (digits < 5)
            return false;
        for (size_t d = end; d < end + digits; d++)
            nums[n] = nums[n] * 10 + (uint64_t)(path[d] - '0');
        const char *sep = n == 1 ? "-of-" : "-";
        const size_t sl = strlen(sep);
        if (end < sl || memcmp(path + end - sl, sep, sl) != 0)
            return false;
        end -= sl;
    }
    if (path + end < base) /* the prefix may be empty, but not reach into the directory */
        return false;
    *prefix_len = end;
    *no = nums[0];
    *count = nums[1];
    return true;
}

/* A later shard's walk failed: its message gets the shard's path in front. */
static tm_status shard_failed(tm_status st, const char *path, tm_error *err)
{
    if (err) {
        char msg[TM_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s", err->message);
        tm__fail(err, st, err->offset, "%s: %s", path, msg);
    }
    return st;
}

/* Shard i of n agrees with its name and with the first shard (whose keys are first). */
static tm_status check_shard_keys(const split_keys *k, const split_keys *first, uint32_t i,
                                  uint32_t n, const char *path, tm_error *err)
{
    char said[160];
    if (!k->kv[SPLIT_NO] || !k->kv[SPLIT_COUNT])
        return tm__fail(err, TM_BAD_VALUE, TM_NO_OFFSET,
                        "%s: %s is missing: every shard of a split set carries split.no and "
                        "split.count (this is shard %u of %u by its name)",
                        path, k->kv[SPLIT_NO] ? "split.count" : "split.no", i + 1, n);
    if (k->v[SPLIT_NO] != i)
        return tm__fail(err, TM_BAD_VALUE, k->kv[SPLIT_NO]->offset,
                        "%s: %s, but the file's name makes it shard %u of %u (split.no %u)", path,
                        key_said(said, sizeof said, k, SPLIT_NO), i + 1, n, i);
    if (k->v[SPLIT_COUNT] != n)
        return tm__fail(err, TM_BAD_VALUE, k->kv[SPLIT_COUNT]->offset,
                        "%s: %s, but the first shard and the file's name say %u shards", path,
                        key_said(said, sizeof said, k, SPLIT_COUNT), n);
    if (k->kv[SPLIT_TENSORS] && first->kv[SPLIT_TENSORS] &&
        k->v[SPLIT_TENSORS] != first->v[SPLIT_TENSORS])
        return tm__fail(err, TM_BAD_VALUE, k->kv[SPLIT_TENSORS]->offset,
                        "%s: %s, but the first shard says %llu", path,
                        key_said(said, sizeof said, k, SPLIT_TENSORS),
                        (ull)first->v[SPLIT_TENSORS]);
    return TM_OK;
}

/* The first shard's split.tensors.count against the tensors the shards hold. */
static tm_status check_tensor_total(const image *imgs, uint32_t n, const split_keys *first,
                                    const char *path, uint64_t *total, tm_error *err)
{
    *total = 0;
    for (uint32_t i = 0; i < n; i++)
        *total += imgs[i].lay.n_tensors; /* each bounded by its file's size: no overflow */
    if (!first->kv[SPLIT_TENSORS] || first->v[SPLIT_TENSORS] == *total)
        return TM_OK;
    char said[160], counts[160] = "";
    size_t k = 0;
    for (uint32_t i = 0; i < n && k + 24 < sizeof counts; i++)
        k += (size_t)snprintf(counts + k, sizeof counts - k, "%s%llu", i ? " + " : "",
                              (ull)imgs[i].lay.n_tensors);
    return tm__fail(err, TM_BAD_VALUE, first->kv[SPLIT_TENSORS]->offset,
                    "%s: %s, but the %u shards hold %llu tensors (%s%s)", path,
                    key_said(said, sizeof said, first, SPLIT_TENSORS), n, (ull)*total, counts,
                    k + 24 < sizeof counts ? "" : " ...");
}

/* Every shard walked and checked: the first shard's metadata and all tensors, in shard order,
 * become the index. Takes the images' arrays. */
static tm_status join_images(tm_file *f, image *imgs, uint32_t n, uint64_t total, tm_error *err)
{
    tm_tensor *t = malloc((size_t)total * sizeof *t + 1);
    if (!t)
        return tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for %llu tensors",
                        (ull)total);
    uint64_t at = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (imgs[i].lay.n_tensors)
            memcpy(t + at, imgs[i].tensors, (size_t)imgs[i].lay.n_tensors * sizeof *t);
        at += imgs[i].lay.n_tensors;
        f->shard_layouts[i] = imgs[i].lay;
        f->shard_layouts[i].n_shards = 1;
    }
    f->tensors = t;
    f->kvs = imgs[0].kvs;
    imgs[0].kvs = NULL;
    f->layout.n_kv = imgs[0].lay.n_kv;
    f->layout.n_tensors = total;
    tm__shards_sum(f);
    return TM_OK;
}

/* f->maps[0] is shard `opened` of a set of n (its keys checked), walked into *opened_img: map
 * and walk the others, check them, and present them as one index. */
static tm_status open_set(tm_file *f, image *opened_img, const split_keys *opened_keys,
                          unsigned flags, tm_error *err)
{
    char *path = f->maps[0].path;
    const uint32_t n = (uint32_t)opened_keys->v[SPLIT_COUNT];
    const uint32_t opened = (uint32_t)opened_keys->v[SPLIT_NO];
    char said[160];
    size_t prefix_len;
    uint64_t name_no, name_count;
    if (!parse_split_name(path, &prefix_len, &name_no, &name_count))
        return tm__fail(err, TM_BAD_VALUE, opened_keys->kv[SPLIT_COUNT]->offset,
                        "%s: %s makes this file one shard of a set, but its name does not end "
                        "in -NNNNN-of-NNNNN.gguf, the name its other shards are found by (open "
                        "it alone with --one-shard)",
                        path, key_said(said, sizeof said, opened_keys, SPLIT_COUNT));
    if (name_count != n || name_no != (uint64_t)opened + 1) {
        const int which = name_count != n ? SPLIT_COUNT : SPLIT_NO;
        return tm__fail(err, TM_BAD_VALUE, opened_keys->kv[which]->offset,
                        "%s: %s, but the file's name says shard %llu of %llu", path,
                        key_said(said, sizeof said, opened_keys, which), (ull)name_no,
                        (ull)name_count);
    }

    char **paths = calloc(n, sizeof *paths);
    image *imgs = calloc(n, sizeof *imgs);
    tm_status st = paths && imgs ? TM_OK
                                 : tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for %u "
                                            "shards", n);
    for (uint32_t i = 0; i < n && st == TM_OK; i++) {
        const size_t cap = prefix_len + 32;
        if ((paths[i] = malloc(cap)) != NULL)
            snprintf(paths[i], cap, "%.*s-%05u-of-%05u.gguf", (int)prefix_len, path, i + 1, n);
        else
            st = tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory");
    }
    if (st == TM_OK)
        st = tm__shards_open(f, paths, n, (int)opened, flags, err);
    if (st != TM_OK)
        goto out;
    imgs[opened] = *opened_img;
    *opened_img = (image){0};
    for (uint64_t t = 0; t < imgs[opened].lay.n_tensors; t++)
        imgs[opened].tensors[t].shard = opened;

    split_keys first = {0};
    for (uint32_t i = 0; i < n && st == TM_OK; i++) {
        if (i != opened &&
            (st = tm__gguf_walk_image(&f->maps[i], i, flags, &imgs[i], err)) != TM_OK)
            st = shard_failed(st, paths[i], err);
        split_keys k;
        if (st == TM_OK)
            st = read_split_keys(&imgs[i], paths[i], &k, err);
        if (i == 0)
            first = k;
        if (st == TM_OK)
            st = check_shard_keys(&k, &first, i, n, paths[i], err);
    }
    uint64_t total = 0;
    if (st == TM_OK)
        st = check_tensor_total(imgs, n, &first, paths[0], &total, err);
    if (st == TM_OK)
        st = join_images(f, imgs, n, total, err);
out:
    for (uint32_t i = 0; i < n; i++) {
        if (imgs)
            tm__gguf_image_free(&imgs[i]);
        if (paths)
            free(paths[i]);
    }
    free(imgs);
    free(paths);
    return st;
}

tm_status tm__gguf_parse(tm_file *f, unsigned flags, tm_error *err)
{
    image img = {0};
    split_keys k = {0};
    tm_status st = tm__gguf_walk_image(&f->maps[0], 0, flags, &img, err);
    if (st == TM_OK)
        st = read_split_keys(&img, f->maps[0].path ? f->maps[0].path : "buffer", &k, err);
    if (st != TM_OK) {
        tm__gguf_image_free(&img);
        return st;
    }
    /* The first shard of a set opens the set, and so does any shard with TM_OPEN_ALL_SHARDS;
     * a file with no directory (a buffer, standard input) has no siblings to open. */
    const bool in_set = k.kv[SPLIT_COUNT] && k.kv[SPLIT_NO] && k.v[SPLIT_COUNT] > 1;
    if (in_set && tm__shard_has_dir(&f->maps[0]) && !(flags & TM_OPEN_ONE_SHARD) &&
        (k.v[SPLIT_NO] == 0 || (flags & TM_OPEN_ALL_SHARDS))) {
        char said[160];
        if (k.v[SPLIT_COUNT] > MAX_SPLIT_COUNT)
            st = tm__fail(err, TM_LIMIT, k.kv[SPLIT_COUNT]->offset, "%s: %s is over the "
                          "format's %u shards", f->maps[0].path,
                          key_said(said, sizeof said, &k, SPLIT_COUNT), MAX_SPLIT_COUNT);
        else if (k.v[SPLIT_NO] >= k.v[SPLIT_COUNT])
            st = tm__fail(err, TM_BAD_VALUE, k.kv[SPLIT_NO]->offset, "%s: %s is not below "
                          "split.count %llu", f->maps[0].path,
                          key_said(said, sizeof said, &k, SPLIT_NO), (ull)k.v[SPLIT_COUNT]);
        else
            st = open_set(f, &img, &k, flags, err);
        tm__gguf_image_free(&img);
        return st;
    }
    f->layout = img.lay;
    f->kvs = img.kvs;
    f->tensors = img.tensors;
    return TM_OK;
}
