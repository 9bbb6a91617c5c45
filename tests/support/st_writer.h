/* Safetensors files for the tests, written as the reference writer (Hugging Face safetensors)
 * writes them: the JSON header padded with spaces to a multiple of 8 bytes, tensors contiguous
 * in the order added. st_image_raw builds a file around any header text, for the bad cases. */
#ifndef TM_TESTS_ST_WRITER_H
#define TM_TESTS_ST_WRITER_H

#include <stddef.h>
#include <stdint.h>

typedef struct st_writer st_writer;

st_writer *st_writer_new(void);
void st_writer_free(st_writer *w);
/* An __metadata__ entry (string -> string). */
void st_writer_meta(st_writer *w, const char *key, const char *value);
/* A tensor: shape in PyTorch order (slowest first), n_bytes of data (copied), placed after the
 * previous tensor. */
void st_writer_add(st_writer *w, const char *name, const char *dtype, uint32_t n_dims,
                   const uint64_t *shape, const void *data, size_t n_bytes);
/* The whole file image (malloc'd; *len set), or write it to path (0 on success). */
uint8_t *st_writer_image(const st_writer *w, size_t *len);
int st_writer_write(const st_writer *w, const char *path);

/* 8-byte length + header (as given, not padded) + data. malloc'd; *len set. */
uint8_t *st_image_raw(const char *header, const void *data, size_t data_len, size_t *len);
/* Write bytes to path (0 on success). */
int st_write_file(const char *path, const void *bytes, size_t len);

#endif
