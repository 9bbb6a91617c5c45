/* Where the tool's output goes, and what it leaves there when something fails: device nodes
 * (made with mknod in the test's own directory, never the real /dev), FIFOs, existing files
 * that must survive a failed write (a decoder missing, RLIMIT_FSIZE, a full device), outputs
 * that are the input by path, hard link or symlink (also a shard of a checkpoint), and the
 * library's writer over an existing file. */
#include "support/st_writer.h"
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

TestSuite(cli_output, .fini = test_cleanup);

static void ok(tm_status s, const tm_error *err)
{
    cr_assert_eq(s, TM_OK, "%s", err->message);
}

#define ROWS 3u
#define COLS 64u
static float values[ROWS * COLS];

/* A type the library cannot decode (found by asking, as test_cli_dump does). */
static tm_type undecodable(void)
{
    for (int t = 0; t < 2048; t++)
        if (tm_type_block_bytes((tm_type)t) && !tm_type_can_dequant((tm_type)t))
            return (tm_type)t;
    cr_skip_test("every type has a decoder: no tensor that fails to dump");
    return TM_TYPE_F32;
}

/* "v": f32 COLS x ROWS (a dump of 128 + 768 bytes as .npy); "odd": a type without a decoder. */
static const char *write_model(const char *name)
{
    for (unsigned i = 0; i < ROWS * COLS; i++)
        values[i] = (float)i - 7.5f;
    const char *path = test_path(name);
    tm_writer *w;
    tm_error err;
    const uint64_t ne[2] = {COLS, ROWS}, one[1] = {tm_type_block_elems(undecodable())};
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_tensor(w, "v", TM_TYPE_F32, 2, ne, values, &err), &err);
    ok(tm_writer_tensor(w, "odd", undecodable(), 1, one, NULL, &err), &err);
    ok(tm_writer_finish(w, path, &err), &err);
    return path;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

static void expect_text(const char *path, const char *text)
{
    size_t len;
    char *got = read_all(path, &len);
    cr_expect(len == strlen(text) && memcmp(got, text, len) == 0,
              "%s should still hold \"%s\", holds %zu bytes: \"%.60s\"", path, text, len, got);
    free(got);
}

/* A character device node in the test's directory; the test is skipped, saying why, when this
 * process may not make one. */
static const char *make_node(const char *name, unsigned major_no, unsigned minor_no)
{
    const char *path = test_path(name);
    if (mknod(path, S_IFCHR | 0666, makedev(major_no, minor_no)) != 0)
        cr_skip_test("mknod %s (c %u %u): %s; device-node tests need root", name, major_no,
                     minor_no, strerror(errno));
    return path;
}

static void expect_node(const char *path, unsigned major_no, unsigned minor_no)
{
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0, "%s was removed", path);
    cr_expect(S_ISCHR(st.st_mode) && major(st.st_rdev) == major_no &&
                  minor(st.st_rdev) == minor_no,
              "%s is no longer the device node c %u %u", path, major_no, minor_no);
}

/* Nothing in the test's directory but the files named (and the runner's .stdout/.stderr): no
 * temporary file left behind. */
static void expect_only(const char *const *names, size_t n)
{
    DIR *d = opendir(test_dir());
    cr_assert_not_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        bool known = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
                     !strcmp(e->d_name, ".stdout") || !strcmp(e->d_name, ".stderr");
        for (size_t i = 0; i < n; i++)
            known = known || !strcmp(e->d_name, names[i]);
        cr_expect(known, "%s was left in the directory", e->d_name);
    }
    closedir(d);
}

static void expect_fail(tool_result *r, const char *needle)
{
    cr_expect_eq(r->status, 1, "exit %d; stderr: %s", r->status, r->err);
    cr_expect_not_null(strstr(r->err, needle), "stderr lacks \"%s\": %s", needle, r->err);
    tool_result_free(r);
}

/* ---- device nodes and FIFOs: written directly, never removed ---------------------------- */

Test(cli_output, a_failed_dump_to_a_device_node_leaves_the_node)
{
    const char *model = write_model("m.gguf");
    const char *null = make_node("null", 1, 3);
    tool_result r = tool_run("dump", model, "odd", "-o", null, "--format", "raw", NULL);
    expect_fail(&r, "has no decoder");
    expect_node(null, 1, 3);
}

Test(cli_output, a_dump_to_a_full_device_fails_and_leaves_the_node)
{
    const char *model = write_model("m.gguf");
    const char *full = make_node("full", 1, 7);
    tool_result r = tool_run("dump", model, "v", "-o", full, "--format", "npy", NULL);
    expect_fail(&r, "No space left on device");
    expect_node(full, 1, 7);
    const char *left[] = {"m.gguf", "full"};
    expect_only(left, 2);
}

Test(cli_output, a_dump_to_a_device_node_writes_it_directly)
{
    const char *model = write_model("m.gguf");
    const char *null = make_node("null", 1, 3);
    tool_result r = tool_run("dump", model, "v", "-o", null, "--format", "raw", NULL);
    cr_expect_eq(r.status, 0, "stderr: %s", r.err);
    tool_result_free(&r);
    expect_node(null, 1, 3);
    const char *left[] = {"m.gguf", "null"};
    expect_only(left, 2);
}

/* The read end is opened first (non-blocking) so the tool's open for writing does not wait;
 * the dump (896 bytes) fits in the pipe. */
static int open_fifo(const char *path)
{
    cr_assert_eq(mkfifo(path, 0600), 0, "mkfifo: %s", strerror(errno));
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    cr_assert_geq(fd, 0);
    return fd;
}

static void expect_fifo(const char *path)
{
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0, "%s was removed", path);
    cr_expect(S_ISFIFO(st.st_mode), "%s is no longer a FIFO", path);
}

Test(cli_output, a_dump_to_a_fifo_streams_into_it)
{
    const char *model = write_model("m.gguf");
    const char *fifo = test_path("out.fifo");
    int fd = open_fifo(fifo);
    tool_result r = tool_run("dump", model, "v", "-o", fifo, "--format", "raw", NULL);
    cr_expect_eq(r.status, 0, "stderr: %s", r.err);
    tool_result_free(&r);
    static float got[ROWS * COLS + 1];
    ssize_t n = read(fd, got, sizeof got);
    close(fd);
    cr_expect_eq(n, (ssize_t)sizeof values, "%zd bytes came through the FIFO", n);
    cr_expect_eq(memcmp(got, values, sizeof values), 0);
    expect_fifo(fifo);
}

Test(cli_output, a_failed_dump_to_a_fifo_leaves_the_fifo)
{
    const char *model = write_model("m.gguf");
    const char *fifo = test_path("out.fifo");
    int fd = open_fifo(fifo);
    tool_result r = tool_run("dump", model, "odd", "-o", fifo, "--format", "raw", NULL);
    close(fd);
    expect_fail(&r, "has no decoder");
    expect_fifo(fifo);
}

/* ---- an existing file survives a failed write, and is replaced whole on success ----------- */

Test(cli_output, an_existing_file_survives_a_dump_that_fails_to_decode)
{
    const char *model = write_model("m.gguf");
    const char *keep = test_path("keep.npy");
    write_text(keep, "precious");
    tool_result r = tool_run("dump", model, "odd", "-o", keep, NULL);
    expect_fail(&r, "has no decoder");
    expect_text(keep, "precious");
    const char *left[] = {"m.gguf", "keep.npy"};
    expect_only(left, 2);
}

/* RLIMIT_FSIZE of 300 bytes with SIGXFSZ ignored: writes past it fail with EFBIG. The limit
 * and the ignored signal pass to the tool through fork and exec; the runner's own .stderr
 * stays under it. */
static tool_result run_with_file_limit(rlim_t limit, const char *const *argv)
{
    struct rlimit old, lim;
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = limit;
    signal(SIGXFSZ, SIG_IGN);
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    tool_result r = tool_run(argv[0], argv[1], argv[2], argv[3], argv[4], NULL);
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, SIG_DFL);
    return r;
}

Test(cli_output, an_existing_file_survives_a_dump_cut_by_the_file_size_limit)
{
    const char *model = write_model("m.gguf");
    const char *keep = test_path("keep.npy");
    write_text(keep, "precious");
    const char *argv[] = {"dump", model, "v", "-o", keep};
    tool_result r = run_with_file_limit(300, argv);
    expect_fail(&r, "File too large");
    expect_text(keep, "precious");
    const char *left[] = {"m.gguf", "keep.npy"};
    expect_only(left, 2);
}

Test(cli_output, an_existing_file_survives_write_from_header_cut_by_the_file_size_limit)
{
    const char *model = write_model("m.gguf");
    const char *json = test_path("h.json");
    tool_result h = tool_run("header", model, NULL);
    cr_assert_eq(h.status, 0, "stderr: %s", h.err);
    cr_assert_eq(st_write_file(json, h.out, h.out_len), 0);
    tool_result_free(&h);
    const char *keep = test_path("keep.gguf");
    write_text(keep, "precious");
    const char *argv[] = {"write", "--from-header", json, keep, NULL};
    tool_result r = run_with_file_limit(300, argv);
    expect_fail(&r, "File too large");
    expect_text(keep, "precious");
    const char *left[] = {"m.gguf", "h.json", "keep.gguf"};
    expect_only(left, 3);
}

Test(cli_output, a_successful_dump_replaces_the_file_keeping_its_permissions_and_symlink)
{
    const char *model = write_model("m.gguf");
    const char *target = test_path("target.raw"), *link = test_path("link.raw");
    write_text(target, "old");
    cr_assert_eq(chmod(target, 0640), 0);
    cr_assert_eq(symlink("target.raw", link), 0);
    tool_result r = tool_run("dump", model, "v", "-o", link, NULL);
    cr_expect_eq(r.status, 0, "stderr: %s", r.err);
    tool_result_free(&r);
    struct stat st;
    cr_assert_eq(lstat(link, &st), 0);
    cr_expect(S_ISLNK(st.st_mode), "the symlink was replaced by a file");
    cr_assert_eq(stat(target, &st), 0);
    cr_expect_eq(st.st_mode & 07777, 0640, "mode %o", st.st_mode & 07777);
    size_t len;
    char *got = read_all(target, &len);
    cr_expect(len == sizeof values && memcmp(got, values, len) == 0, "%zu bytes", len);
    free(got);
}

/* ---- the output is an input -------------------------------------------------------------- */

/* Run the tool with args (NULL-terminated), expect the same-file refusal, and kept's bytes
 * exactly as they were. */
static void expect_refused_keeping(const char *kept, const char *const *args)
{
    size_t before_len, after_len;
    char *before = read_all(kept, &before_len);
    tool_result r = tool_run_in(NULL, args);
    expect_fail(&r, "is the same file as the input");
    char *after = read_all(kept, &after_len);
    cr_expect(before_len == after_len && memcmp(before, after, before_len) == 0, "%s changed",
              kept);
    free(before);
    free(after);
}

static void expect_refused_over(const char *model, const char *out)
{
    const char *args[] = {"dump", model, "v", "-o", out, "--format", "npy", NULL};
    expect_refused_keeping(model, args);
}

Test(cli_output, an_output_that_is_the_input_by_path_is_refused)
{
    const char *model = write_model("m.gguf");
    expect_refused_over(model, model);
}

Test(cli_output, an_output_that_is_the_input_by_hard_link_is_refused)
{
    const char *model = write_model("m.gguf");
    const char *hard = test_path("hard.npy");
    cr_assert_eq(link(model, hard), 0);
    expect_refused_over(model, hard);
}

Test(cli_output, an_output_that_is_the_input_by_symlink_is_refused)
{
    const char *model = write_model("m.gguf");
    const char *soft = test_path("soft.npy");
    cr_assert_eq(symlink("m.gguf", soft), 0);
    expect_refused_over(model, soft);
}

Test(cli_output, an_output_that_is_the_input_read_with_no_mmap_is_refused)
{
    const char *model = write_model("m.gguf");
    const char *args[] = {"--no-mmap", "dump", model, "v", "-o", model, "--format", "raw", NULL};
    expect_refused_keeping(model, args);
}

/* dump --all writes DIR/v.npy: a model stored in DIR under that name is an input. */
Test(cli_output, dump_all_does_not_write_over_a_model_in_its_directory)
{
    const char *model = write_model("v.npy");
    const char *args[] = {"dump", model, "--all", "-o", test_dir(), NULL};
    expect_refused_keeping(model, args);
}

/* Every shard of a checkpoint is an input, not only the file named on the command line. */
Test(cli_output, an_output_that_is_a_second_shard_is_refused)
{
    static const float zeros[6];
    const uint64_t s23[2] = {2, 3};
    char one[256], two[256], index[256];
    snprintf(one, sizeof one, "%s", test_path("model-00001-of-00002.safetensors"));
    snprintf(two, sizeof two, "%s", test_path("model-00002-of-00002.safetensors"));
    snprintf(index, sizeof index, "%s", test_path("model.safetensors.index.json"));
    st_writer *w = st_writer_new();
    st_writer_add(w, "a", "F32", 2, s23, zeros, sizeof zeros);
    cr_assert_eq(st_writer_write(w, one), 0);
    st_writer_free(w);
    w = st_writer_new();
    st_writer_add(w, "b", "F32", 2, s23, zeros, sizeof zeros);
    cr_assert_eq(st_writer_write(w, two), 0);
    st_writer_free(w);
    write_text(index, "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\", "
                      "\"b\": \"model-00002-of-00002.safetensors\"}}");
    const char *args[] = {"dump", index, "a", "-o", two, "--format", "raw", NULL};
    expect_refused_keeping(two, args);
}

Test(cli_output, write_from_header_refuses_to_write_over_its_json)
{
    const char *model = write_model("m.gguf");
    const char *json = test_path("h.json");
    tool_result h = tool_run("header", model, NULL);
    cr_assert_eq(h.status, 0, "stderr: %s", h.err);
    cr_assert_eq(st_write_file(json, h.out, h.out_len), 0);
    tool_result_free(&h);
    const char *args[] = {"write", "--from-header", json, json, NULL};
    expect_refused_keeping(json, args);
}

/* ---- the library's writer ------------------------------------------------------------------ */

static void *mmap_unreadable(size_t n)
{
    void *p = mmap(NULL, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(p, MAP_FAILED);
    return p;
}

/* A tensor whose data cannot be read (a pointer to unmapped memory): pwrite fails with EFAULT
 * after the header went out, the moment the old code had already truncated the file. */
Test(cli_output, tm_writer_finish_that_fails_leaves_the_existing_file)
{
    const char *keep = test_path("keep.gguf");
    write_text(keep, "precious");
    long page = sysconf(_SC_PAGESIZE);
    void *hole = mmap_unreadable((size_t)page); /* 64 floats fit in a page */
    tm_writer *w;
    tm_error err;
    const uint64_t ne[1] = {64};
    ok(tm_writer_new(&w, &err), &err);
    ok(tm_writer_tensor(w, "t", TM_TYPE_F32, 1, ne, hole, &err), &err);
    cr_expect_eq(tm_writer_finish(w, keep, &err), TM_IO);
    expect_text(keep, "precious");
    const char *left[] = {"keep.gguf"};
    expect_only(left, 1);
}

Test(cli_output, tm_writer_finish_that_fails_on_a_device_leaves_the_node)
{
    const char *full = make_node("full", 1, 7);
    tm_writer *w;
    tm_error err;
    ok(tm_writer_new(&w, &err), &err);
    cr_expect_neq(tm_writer_finish(w, full, &err), TM_OK);
    expect_node(full, 1, 7);
}
