/* The later shards of a split GGUF set are found by name, not by what they hold: each must be
 * checked as a GGUF file from its first byte, as the file opened is. */
#include "support/helpers.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

TestSuite(read_shards, .fini = test_cleanup);

/* Shard i of a split set of 2 in the test's directory: the split keys and one f32 tensor. */
static void write_shard(uint32_t i)
{
    tb b = {0};
    tb_head(&b, 3, 1, 3);
    const uint16_t no = (uint16_t)i, count = 2;
    tb_kv_head(&b, "split.no", TM_V_U16);
    tb_bytes(&b, &no, 2);
    tb_kv_head(&b, "split.count", TM_V_U16);
    tb_bytes(&b, &count, 2);
    tb_kv_head(&b, "split.tensors.count", TM_V_I32);
    tb_u32(&b, 2);
    char name[16], file[64];
    snprintf(name, sizeof name, "t.%u", i);
    const uint64_t ne[1] = {16};
    tb_info(&b, name, 1, ne, TM_TYPE_F32, 0);
    tb_pad(&b, TM_DEFAULT_ALIGNMENT);
    tb_zeros(&b, 64);
    snprintf(file, sizeof file, "set-%05u-of-00002.gguf", i + 1);
    cr_assert_eq(tb_write(&b, test_path(file)), 0);
    tb_free(&b);
}

/* The set with its second shard replaced by these bytes, opened read into memory (so that a
 * read past the shard's bytes is one past a heap block, which ASan reports). */
static tm_status open_with_second(const void *bytes, size_t n, tm_error *err)
{
    write_shard(0);
    tb b = {0};
    tb_bytes(&b, bytes, n);
    cr_assert_eq(tb_write(&b, test_path("set-00002-of-00002.gguf")), 0);
    tb_free(&b);
    tm_file *f = NULL;
    tm_status st = tm_open(test_path("set-00001-of-00002.gguf"), TM_OPEN_NO_MMAP, &f, err);
    tm_close(f);
    return st;
}

Test(read_shards, a_whole_set_opens)
{
    write_shard(0);
    write_shard(1);
    tm_file *f;
    tm_error err;
    cr_assert_eq(tm_open(test_path("set-00001-of-00002.gguf"), TM_OPEN_NO_MMAP, &f, &err), TM_OK,
                 "%s", err.message);
    cr_assert_eq(tm_file_layout(f)->n_shards, 2);
    tm_close(f);
}

/* Two bytes: the walk stopped inside the magic, not 2 bytes past the shard's end. */
Test(read_shards, a_shard_shorter_than_the_magic_is_truncated_at_the_magic)
{
    tm_error err;
    cr_assert_eq(open_with_second("GG", 2, &err), TM_TRUNCATED, "%s", err.message);
    cr_assert(strstr(err.message, "set-00002-of-00002.gguf: the file ends at byte 2, inside the "
                                  "magic at byte 0"),
              "%s", err.message);
}

/* A shard of another format under a shard's name is not read as GGUF from byte 4 on. */
Test(read_shards, a_shard_that_is_not_gguf_is_named_by_its_magic)
{
    static const char head[24] = "XXXX\x03";
    tm_error err;
    cr_assert_eq(open_with_second(head, sizeof head, &err), TM_NOT_MODEL, "%s", err.message);
    cr_assert(strstr(err.message, "set-00002-of-00002.gguf: this file opens 'XXXX' and a GGUF "
                                  "file opens 'GGUF'"),
              "%s", err.message);
}
