/* Is this file one shard of a larger model, opened alone? A split GGUF shard says so in its
 * own metadata (split.no, split.count, or the older general.split* names); a safetensors shard
 * does not, and only the model.safetensors.index.json beside it (the file the library opens a
 * checkpoint through) tells that it is one of several. */
#include "shard_alone.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ST_INDEX_NAME "model.safetensors.index.json"

/* The first of keys that f holds as an unsigned integer. */
static bool split_value(const tm_file *f, const char *const *keys, uint64_t *v)
{
    for (; *keys; keys++)
        if (tm_kv_get_uint(tm_kv_find(f, *keys), v) == TM_OK)
            return true;
    return false;
}

/* arg with its "-NNNNN-of-NNNNN.gguf" ending turned to the first shard's number, as the set's
 * files are named; "" when arg does not end so. */
static void first_shard_name(const char *arg, char *out, size_t cap)
{
    static const char tail[] = "-00000-of-00000.gguf";
    const size_t len = strlen(arg), n = sizeof tail - 1;
    out[0] = '\0';
    if (len < n || len >= cap)
        return;
    const char *t = arg + len - n;
    for (size_t i = 0; i < n; i++)
        if (tail[i] == '0' ? t[i] < '0' || t[i] > '9' : t[i] != tail[i])
            return;
    memcpy(out, arg, len + 1);
    memcpy(out + len - n + 1, "00001", 5);
}

static bool gguf_alone(const tm_file *f, const char *arg, cli_shard_alone *out)
{
    static const char *const count_keys[] = {"split.count", "general.split_count", NULL};
    static const char *const no_keys[] = {"split.no", "general.split_no", "general.split", NULL};
    uint64_t count = 0, no = 0;
    if (!split_value(f, count_keys, &count) || count < 2)
        return false;
    split_value(f, no_keys, &no);
    *out = (cli_shard_alone){.shard = no + 1,
                             .shards = count,
                             .one_shard_flag = no == 0 && (cli_open_flags & TM_OPEN_ONE_SHARD)};
    first_shard_name(arg, out->whole, sizeof out->whole);
    return true;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The index beside path, when it names path's file among several shards: which one (in name
 * order, the order the library opens them in) and how many. */
static bool safetensors_alone(const char *path, cli_shard_alone *out)
{
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    const int dir_len = slash ? (int)(slash - path + 1) : 0;
    int n = snprintf(out->whole, sizeof out->whole, "%.*s%s", dir_len, path, ST_INDEX_NAME);
    struct stat st;
    /* an index is bounded as the library bounds it; one that cannot be read earns no note
     * here (opening it says what is wrong) */
    if (n < 0 || (size_t)n >= sizeof out->whole || stat(out->whole, &st) != 0 ||
        !S_ISREG(st.st_mode) || st.st_size > TM_SAFETENSORS_MAX_HEADER)
        return false;
    json_t *index = json_load_file(out->whole, JSON_REJECT_DUPLICATES, NULL);
    json_t *map = json_object_get(index, "weight_map");
    const char **names = calloc(json_object_size(map) + 1, sizeof *names);
    size_t n_names = 0;
    const char *key;
    json_t *v;
    json_object_foreach(map, key, v)
        if (names && json_is_string(v))
            names[n_names++] = json_string_value(v);
    bool alone = false;
    if (names) {
        qsort(names, n_names, sizeof *names, by_name);
        uint64_t shards = 0, shard = 0;
        for (size_t i = 0; i < n_names; i++) {
            if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
                continue;
            shards++;
            if (strcmp(names[i], base) == 0)
                shard = shards;
        }
        alone = shard > 0 && shards > 1;
        out->shard = shard;
        out->shards = shards;
        out->one_shard_flag = false;
    }
    free(names);
    json_decref(index);
    return alone;
}

bool cli_shard_alone_of(const tm_file *f, const char *arg, cli_shard_alone *out)
{
    const tm_layout *l = tm_file_layout(f);
    if (l->n_shards > 1)
        return false; /* opened whole */
    if (l->format == TM_FORMAT_GGUF)
        return gguf_alone(f, arg, out);
    /* a remote shard is not looked into: its index would be one more download */
    return !tm_file_is_remote(f) && strcmp(arg, "-") != 0 &&
           safetensors_alone(tm_shard_path(f, 0), out);
}

void cli_shard_alone_print(FILE *out, const cli_shard_alone *a)
{
    char text[1200];
    if (a->one_shard_flag)
        snprintf(text, sizeof text, "one shard (%" PRIu64 " of %" PRIu64 ") opened alone by "
                 "--one-shard: open it without --one-shard for the whole model", a->shard,
                 a->shards);
    else
        snprintf(text, sizeof text, "one shard (%" PRIu64 " of %" PRIu64 ") opened alone: open "
                 "%s for the whole model", a->shard, a->shards,
                 a->whole[0] ? a->whole : "the set's first shard");
    cli_print_text(out, text);
}

json_t *cli_shard_alone_json(const cli_shard_alone *a)
{
    return json_pack("{s:o, s:o, s:o}", "shard", cli_json_u64(a->shard), "shards",
                     cli_json_u64(a->shards), "whole_model",
                     a->whole[0] ? cli_json_str((tm_str){a->whole, strlen(a->whole)})
                                 : json_null());
}
