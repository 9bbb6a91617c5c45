/* Safetensors files for the tests (see st_writer.h). JSON through jansson, as the library reads
 * it, so that escaping is never hand-rolled. */
#include "st_writer.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct st_writer {
    json_t *header;   /* insertion order is kept by jansson, and so is the file's order */
    uint8_t *data;
    size_t data_len;
};

st_writer *st_writer_new(void)
{
    st_writer *w = calloc(1, sizeof *w);
    if (w)
        w->header = json_object();
    return w;
}

void st_writer_free(st_writer *w)
{
    if (!w)
        return;
    json_decref(w->header);
    free(w->data);
    free(w);
}

void st_writer_meta(st_writer *w, const char *key, const char *value)
{
    json_t *meta = json_object_get(w->header, "__metadata__");
    if (!meta) {
        meta = json_object();
        json_object_set_new(w->header, "__metadata__", meta);
    }
    json_object_set_new(meta, key, json_string(value));
}

void st_writer_add(st_writer *w, const char *name, const char *dtype, uint32_t n_dims,
                   const uint64_t *shape, const void *data, size_t n_bytes)
{
    json_t *shp = json_array();
    for (uint32_t d = 0; d < n_dims; d++)
        json_array_append_new(shp, json_integer((json_int_t)shape[d]));
    json_t *t = json_pack("{s:s, s:o, s:[I, I]}", "dtype", dtype, "shape", shp, "data_offsets",
                          (json_int_t)w->data_len, (json_int_t)(w->data_len + n_bytes));
    json_object_set_new(w->header, name, t);
    w->data = realloc(w->data, w->data_len + n_bytes + 1);
    if (n_bytes)
        memcpy(w->data + w->data_len, data, n_bytes);
    w->data_len += n_bytes;
}

uint8_t *st_image_raw(const char *header, const void *data, size_t data_len, size_t *len)
{
    size_t n = strlen(header);
    uint8_t *img = malloc(8 + n + data_len + 1);
    for (int i = 0; i < 8; i++)
        img[i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(img + 8, header, n);
    if (data_len)
        memcpy(img + 8 + n, data, data_len);
    *len = 8 + n + data_len;
    return img;
}

uint8_t *st_writer_image(const st_writer *w, size_t *len)
{
    char *json = json_dumps(w->header, JSON_COMPACT);
    size_t n = strlen(json), padded = (n + 7) / 8 * 8;
    char *header = malloc(padded + 1);
    memcpy(header, json, n);
    memset(header + n, ' ', padded - n);
    header[padded] = 0;
    uint8_t *img = st_image_raw(header, w->data, w->data_len, len);
    free(header);
    free(json);
    return img;
}

int st_write_file(const char *path, const void *bytes, size_t len)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return -1;
    int bad = fwrite(bytes, 1, len, fp) != len;
    return fclose(fp) != 0 || bad ? -1 : 0;
}

int st_writer_write(const st_writer *w, const char *path)
{
    size_t len;
    uint8_t *img = st_writer_image(w, &len);
    int r = st_write_file(path, img, len);
    free(img);
    return r;
}
