/* One GGUF image's walk (gguf_walk.c), for gguf.c, which turns one image or a split set's images
 * into the index. */
#ifndef TM_GGUF_WALK_H
#define TM_GGUF_WALK_H

#include "../common/internal.h"

/* One file's walk: its layout, metadata and tensors, before they join the index (a split set
 * walks each of its shards into one of these). */
typedef struct tm__gguf_image {
    tm_layout lay;
    tm_kv *kvs;
    tm_tensor *tensors;
} tm__gguf_image;

/* Walk the GGUF file in m (shard number shard of its set, 0 for a lone file) into img, fetching
 * more of a remote file's head as the walk needs it. flags are tm_open's: TM_OPEN_TRUNCATED
 * accepts a file cut off after its header. On failure img may hold a partial walk: free it
 * either way. */
tm_status tm__gguf_walk_image(tm__source *m, uint32_t shard, unsigned flags, tm__gguf_image *img,
                              tm_error *err);
/* Free img's arrays and zero it. */
void tm__gguf_image_free(tm__gguf_image *img);

#endif /* TM_GGUF_WALK_H */
