/* TM_OPEN_NO_MMAP on a file larger than TM_READ_WHOLE_LIMIT (default 64 MiB): the head is read
 * as the header walk asks for it and tensor bytes when they are asked for, so that a header
 * command on a multi-gigabyte file reads its header only; what is read is what a mapping would
 * show, and a file that changes in between is refused rather than mixed. Bytes read are counted
 * by the kernel (/proc/self/io), not by the library. */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define MiB (1ull << 20)

static void suite_fini(void) { test_cleanup(); }

TestSuite(lazy_read, .fini = suite_fini, .timeout = 60);

static void ok(tm_status st, const tm_error *err) { cr_assert_eq(st, TM_OK, "%s", err->message); }

/* The bytes this process has read so far (read, pread, ...: rchar). */
static uint64_t bytes_read(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    cr_assert_not_null(f, "no /proc/self/io");
    char line[128];
    unsigned long long v = 0;
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = sscanf(line, "rchar: %llu", &v) == 1;
    fclose(f);
    cr_assert(found, "no rchar in /proc/self/io");
    return v;
}

static const float tail_values[64] = {1.5f, -2.25f, 3.0f, 0.125f};

/* A GGUF file of big_bytes on paper: a header of more than header_bytes (a string that long:
 * several reads of the head), tensor "big" (f32, a hole: no disk), then "tail" (64 known
 * floats). */
static const char *write_sparse(const char *name, size_t header_bytes, uint64_t big_bytes)
{
    const char *path = test_path(name);
    tm_writer *w;
    tm_error err;
    const uint64_t big_ne[1] = {big_bytes / 4}, tail_ne[1] = {64};
    ok(tm_writer_new(&w, &err), &err);
    char *text = malloc(header_bytes + 1);
    cr_assert_not_null(text);
    memset(text, 't', header_bytes);
    ok(tm_writer_kv_str(w, "tokenizer.text", text, header_bytes, &err), &err);
    free(text);
    ok(tm_writer_tensor(w, "big", TM_TYPE_F32, 1, big_ne, NULL, &err), &err);
    ok(tm_writer_tensor(w, "tail", TM_TYPE_F32, 1, tail_ne, tail_values, &err), &err);
    ok(tm_writer_finish(w, path, &err), &err);
    return path;
}

/* Opening reads the 3 MiB header (in a few growing reads: at most twice what it needs), not
 * the 256 MiB of data; decoding a tensor reads that tensor. */
Test(lazy_read, opening_reads_the_header_and_a_decode_its_tensor)
{
    const char *path = write_sparse("m.gguf", 3 * MiB, 256 * MiB);
    tm_file *f;
    tm_error err;
    const uint64_t before = bytes_read();
    ok(tm_open(path, TM_OPEN_NO_MMAP, &f, &err), &err);
    const uint64_t opened = bytes_read();
    cr_expect_lt(opened - before, 8 * MiB, "opening read %llu bytes",
                 (unsigned long long)(opened - before));
    cr_expect_geq(tm_file_bytes_size(f), 3 * MiB);
    cr_expect_lt(tm_file_bytes_size(f), 8 * MiB);
    cr_assert_eq(tm_n_tensors(f), 2);
    const tm_tensor *big = tm_tensor_find(f, "big"), *tail = tm_tensor_find(f, "tail");
    cr_assert(big && tail);
    cr_expect_null(big->data, "a tensor of a file read as needed has no view");
    float out[64];
    ok(tm_dequant_tensor(tail, out, 1, &err), &err);
    cr_expect_arr_eq(out, tail_values, sizeof out);
    cr_expect_lt(bytes_read() - opened, 1 * MiB, "the decode read %llu bytes",
                 (unsigned long long)(bytes_read() - opened));
    cr_expect(!tm_file_is_remote(f));
    tm_close(f);
}

/* The tool's header command in an address space far smaller than the file: reading it whole
 * cannot even be tried. */
Test(lazy_read, no_mmap_info_of_an_8_gib_file_runs_in_1_gib_of_address_space)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("not under AddressSanitizer: its shadow memory needs the address space this "
                 "test caps (the normal build runs it)");
#endif
    const char *path = write_sparse("big.gguf", 4096, 8ull << 30);
    const char *tool = getenv("TM_TOOL");
    cr_assert_not_null(tool, "TM_TOOL is not set (run the tests through make)");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "ulimit -v 1048576 && exec '%s' --no-mmap info '%s' 2>&1", tool,
             path);
    int status;
    char *out = shell_output(cmd, &status);
    cr_expect_eq(status, 0, "%s", out);
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    char size[32];
    snprintf(size, sizeof size, " %llu\n", (unsigned long long)sb.st_size);
    cr_expect(strstr(out, size), "info does not give the size%s:\n%s", size, out);
    free(out);
}

/* Read as needed, every tensor's bytes and decoded values are a mapping's, bit for bit (the
 * golden files, with TM_READ_WHOLE_LIMIT=0 so that even they are read as needed). */
Test(lazy_read, a_file_read_as_needed_gives_what_a_mapping_gives)
{
    setenv("TM_READ_WHOLE_LIMIT", "0", 1);
    const char *corpus = getenv("TM_CORPUS");
    cr_assert_not_null(corpus, "TM_CORPUS is not set (run the tests through make)");
    static const char *const names[] = {"golden-a.gguf", "golden-b.gguf"};
    for (int k = 0; k < 2; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/golden/%s", corpus, names[k]);
        tm_file *lazy, *mapped;
        tm_error err;
        ok(tm_open(path, TM_OPEN_NO_MMAP, &lazy, &err), &err);
        ok(tm_open(path, 0, &mapped, &err), &err);
        cr_assert_eq(tm_n_tensors(lazy), tm_n_tensors(mapped));
        for (uint64_t i = 0; i < tm_n_tensors(mapped); i++) {
            const tm_tensor *l = tm_tensor_at(lazy, i), *m = tm_tensor_at(mapped, i);
            cr_assert_null(l->data);
            uint8_t *bytes = malloc(m->n_bytes + 1);
            ok(tm_tensor_fetch(l, 0, m->n_bytes, bytes, &err), &err);
            cr_expect_eq(memcmp(bytes, m->data, m->n_bytes), 0, "%s: %.*s", names[k],
                         (int)m->name.len, m->name.ptr);
            free(bytes);
            if (!tm_type_can_dequant(m->type))
                continue;
            float *a = malloc(m->n_elements * sizeof *a + 1);
            float *b = malloc(m->n_elements * sizeof *b + 1);
            ok(tm_dequant_tensor(l, a, 1, &err), &err);
            ok(tm_dequant_tensor(m, b, 1, &err), &err);
            cr_expect_eq(memcmp(a, b, m->n_elements * sizeof *a), 0, "%s: %.*s decoded",
                         names[k], (int)m->name.len, m->name.ptr);
            free(a);
            free(b);
        }
        tm_close(lazy);
        tm_close(mapped);
    }
}

/* A file cut after it was opened is refused when its bytes are asked for, not read short. */
Test(lazy_read, a_file_that_changes_while_read_as_needed_is_refused)
{
    const char *path = write_sparse("m.gguf", 4096, 256 * MiB);
    tm_file *f;
    tm_error err;
    ok(tm_open(path, TM_OPEN_NO_MMAP, &f, &err), &err);
    cr_assert_eq(truncate(path, 4096), 0);
    float out[64];
    cr_expect_eq(tm_dequant_tensor(tm_tensor_find(f, "tail"), out, 1, &err), TM_IO, "%s",
                 err.message);
    cr_expect(strstr(err.message, "changed while it was being read"), "%s", err.message);
    tm_close(f);
}

/* A writer copies a file read as needed as it copies a mapped one: through the file while the
 * path still names it, and read through the source once it does not (the path replaced by a
 * copy: same bytes, another file). */
Test(lazy_read, a_writer_copies_a_file_read_as_needed)
{
    const char *path = write_sparse("m.gguf", 2 * MiB, 80 * MiB);
    const char *copy = test_path("copy.gguf"), *out_a = test_path("a.gguf"),
               *out_b = test_path("b.gguf");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp --sparse=always '%s' '%s'", path, copy);
    cr_assert_eq(system(cmd), 0);
    tm_file *f;
    tm_writer *w;
    tm_error err;
    ok(tm_open(path, TM_OPEN_NO_MMAP, &f, &err), &err);
    ok(tm_writer_new_from(f, &w, &err), &err);
    ok(tm_writer_finish(w, out_a, &err), &err);
    cr_assert_eq(rename(copy, path), 0); /* the path names another file now */
    ok(tm_writer_new_from(f, &w, &err), &err);
    ok(tm_writer_finish(w, out_b, &err), &err);
    tm_close(f);
    int status;
    snprintf(cmd, sizeof cmd, "cmp '%s' '%s' && cmp '%s' '%s'", out_a, path, out_b, path);
    char *text = shell_output(cmd, &status);
    cr_expect_eq(status, 0, "%s", text);
    free(text);
}
