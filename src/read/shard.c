/* A model whose tensors lie in several files: a sharded safetensors checkpoint or a split GGUF
 * set. The format's walker decides which files belong to the set and walks each mapping into the
 * one index; this file owns what does not depend on the format: finding a shard beside the file
 * opened, mapping it (a regular file, named in every message), each shard's own layout, and the
 * totals the file's layout reports. */
#include "../common/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

bool tm__shard_has_dir(const tm__source *m) { return m->path && strcmp(m->path, "-") != 0; }

char *tm__shard_sibling(const char *path, const char *name)
{
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path) + 1 : 0;
    /* a name beside a local file in the current directory stays a local name, even one an
     * index spells "http://...": a local file never makes the library reach the network */
    const char *dot = dir_len == 0 && tm__is_url(name) ? "./" : "";
    size_t cap = (size_t)dir_len + strlen(dot) + strlen(name) + 1;
    char *out = malloc(cap);
    if (out)
        snprintf(out, cap, "%.*s%s%s", dir_len, path, dot, name);
    return out;
}

const char *tm__shard_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

tm_status tm__shard_map(tm__source *m, const char *path, unsigned flags, tm__head_budget *budget,
                        tm_error *err)
{
    memset(m, 0, sizeof *m);
    /* A pipe or a device would be read to its end (or block opening): a shard is a file. The
     * path is looked at first, so that a device is never opened; the file opened is checked
     * again (tm__source_open), so that a path swapped in between is refused too. */
    struct stat sb;
    /* quoted: a safetensors shard's name comes from its index */
    char q[300];
    tm__quote(q, sizeof q, path, strlen(path));
    if (tm__is_url(path)) {
        /* a shard beside a remote file is a URL: fetched as the file is */
    } else if (stat(path, &sb) != 0) {
        return tm__fail(err, errno == ENOENT ? TM_NOT_FOUND : TM_IO, TM_NO_OFFSET,
                        "%s: %s%s", q, errno == ENOENT ? "the shard is missing: " : "",
                        strerror(errno));
    } else if (!S_ISREG(sb.st_mode)) {
        return tm__fail(err, TM_IO, TM_NO_OFFSET, "%s: is not a regular file (a shard must be)",
                        q);
    }
    tm_error inner = {0};
    const tm__source_opts o = {.flags = flags, .regular_only = true,
                               .accept = tm__looks_like_model, .budget = budget};
    tm_status s = tm__source_open(m, path, &o, &inner);
    if (s != TM_OK)
        tm__fail(err, s, inner.offset, "%s: %s", q, inner.message);
    return s;
}

tm_status tm__shards_open(tm_file *f, char *const *paths, uint32_t n, int keep, unsigned flags,
                          tm_error *err)
{
    tm__source *maps = calloc(n, sizeof *maps);
    tm_layout *lays = calloc(n, sizeof *lays);
    tm_status s = maps && lays ? TM_OK
                               : tm__fail(err, TM_NOMEM, TM_NO_OFFSET, "out of memory for %u "
                                          "shards", n);
    /* the shards' first requests share what is left of the head limit */
    f->head_budget.files_to_open = keep >= 0 ? n - 1 : n;
    for (uint32_t i = 0; i < n && s == TM_OK; i++)
        if ((int)i != keep)
            s = tm__shard_map(&maps[i], paths[i], flags, &f->head_budget, err);
    f->head_budget.files_to_open = 0; /* local shards do not count themselves off */
    if (s != TM_OK) {
        for (uint32_t i = 0; maps && i < n; i++)
            tm__source_close(&maps[i]);
        free(maps);
        free(lays);
        return s;
    }
    /* From here f owns the shard maps; tm_close releases n of them. */
    if (keep >= 0) {
        maps[keep] = f->maps[0];
    } else {
        uint64_t b, r;
        tm__source_fetched(&f->maps[0], &b, &r);
        f->fetched_bytes += b;
        f->fetched_requests += r;
        tm__source_close(&f->maps[0]);
    }
    free(f->maps);
    f->maps = maps;
    free(f->shard_layouts);
    f->shard_layouts = lays;
    f->layout.n_shards = n;
    return TM_OK;
}

void tm__shards_sum(tm_file *f)
{
    const tm_layout *lays = f->shard_layouts;
    tm_layout sum = lays[0];
    sum.n_kv = f->layout.n_kv;
    sum.n_tensors = f->layout.n_tensors;
    sum.n_shards = f->layout.n_shards;
    sum.kv_end = sum.infos_end = sum.padding = sum.data_start = sum.data_size = 0;
    sum.tensors_end = sum.file_size = 0;
    /* Byte counts are totals, so that "everything before the tensor data" + data = the size of
     * all files, as one would add them up by hand. */
    for (uint32_t i = 0; i < sum.n_shards; i++) {
        sum.kv_end += lays[i].kv_end;
        sum.infos_end += lays[i].infos_end;
        sum.padding += lays[i].padding;
        sum.data_start += lays[i].data_start;
        sum.data_size += lays[i].data_size;
        sum.tensors_end += lays[i].tensors_end;
        sum.file_size += lays[i].file_size;
    }
    f->layout = sum;
}
