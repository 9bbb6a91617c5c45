/* tools/cli/shard_alone.c: a file that is one shard of a larger model, opened alone, so that
 * the commands that speak of "the model" (info, compare) say so instead of passing a part off
 * as the whole. */
#ifndef TM_CLI_SHARD_ALONE_H
#define TM_CLI_SHARD_ALONE_H

#include "cli.h"

typedef struct cli_shard_alone {
    uint64_t shard, shards; /* shard 2 of 3, counted from 1 */
    char whole[1024];       /* what opens the whole model ("" when it cannot be named) */
    bool one_shard_flag;    /* the set's first shard, opened alone because of --one-shard */
} cli_shard_alone;

/* True, with *out filled, when f (opened from arg) is one shard of several opened alone: a
 * shard of a split GGUF set (split.count above 1) not opened as the set (a later shard, or any
 * shard with --one-shard), or a local safetensors file that the model.safetensors.index.json
 * beside it names as one of several shards. */
bool cli_shard_alone_of(const tm_file *f, const char *arg, cli_shard_alone *out);
/* The note in words, printed escaped: "one shard (2 of 3) opened alone: open X for the whole
 * model". */
void cli_shard_alone_print(FILE *out, const cli_shard_alone *a);
/* {"shard", "shards", "whole_model" (a string or null)}. */
json_t *cli_shard_alone_json(const cli_shard_alone *a);

#endif
