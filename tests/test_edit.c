/* tensormap edit: every value type, kept types and range checks, -o never touching the source,
 * and the original byte for byte intact when an in-place edit fails at any step (a file-size
 * limit; a write failure injected at each call by an LD_PRELOAD shim, tests/shim/fail_io.c). */
#include "support/test_cli.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static float tensor_values[4][1024];

/* A model with entries of several types and four f32 [1024] tensors (16 KiB of data). */
static void write_source(const char *path)
{
    for (int k = 0; k < 4; k++)
        for (int e = 0; e < 1024; e++)
            tensor_values[k][e] = (float)(k * 1024 + e) * 0.25f;
    tm_writer *w;
    tm_error err = {0};
    const uint16_t u16 = 7;
    const float f32 = 1.5f;
    const int32_t arr[2] = {1, 2};
    const char *strs[1] = {"x"};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(w, "general.architecture", "llama", 5, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str(w, "general.name", "model", 5, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_scalar(w, "v.u16", TM_V_U16, &u16, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_scalar(w, "v.f32", TM_V_F32, &f32, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_array(w, "v.arr", TM_V_I32, arr, 2, &err), TM_OK);
    cr_assert_eq(tm_writer_kv_str_array(w, "v.strs", strs, NULL, 1, &err), TM_OK);
    static const char *const names[4] = {"t0", "t1", "t2", "t3"};
    const uint64_t ne[1] = {1024};
    for (int k = 0; k < 4; k++)
        cr_assert_eq(tm_writer_tensor(w, names[k], TM_TYPE_F32, 1, ne, tensor_values[k], &err),
                     TM_OK);
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);
}

/* src.gguf in the test's directory, written afresh; returns its bytes (*len of them). */
static char *fresh_source(char src[256], size_t *len)
{
    snprintf(src, 256, "%s", test_path("src.gguf"));
    write_source(src);
    return read_all(src, len);
}

static tm_file *open_ok(const char *path)
{
    tm_file *f = NULL;
    tm_error err = {0};
    cr_assert_eq(tm_open(path, 0, &f, &err), TM_OK, "%s: %s", path, err.message);
    return f;
}

static tm_value value_of(const tm_file *f, const char *key, tm_vtype type)
{
    const tm_kv *kv = tm_kv_find(f, key);
    cr_assert_not_null(kv, "no %s", key);
    cr_assert_eq(kv->type, type, "%s is a %s", key, tm_vtype_name(kv->type));
    tm_value v;
    cr_assert_eq(tm_kv_value(kv, &v), TM_OK);
    return v;
}

static void expect_tensors_unchanged(const tm_file *f)
{
    static const char *const names[4] = {"t0", "t1", "t2", "t3"};
    for (int k = 0; k < 4; k++) {
        const tm_tensor *t = tm_tensor_find(f, names[k]);
        cr_assert_not_null(t, "no %s", names[k]);
        cr_assert_eq(memcmp(t->data, tensor_values[k], sizeof tensor_values[k]), 0);
    }
}

static bool same_bytes(const char *path, const char *bytes, size_t len)
{
    size_t n;
    char *now = read_all(path, &n);
    bool same = n == len && memcmp(now, bytes, len) == 0;
    free(now);
    return same;
}

Test(edit, every_value_type_into_a_new_file, .fini = test_cleanup)
{
    char src[256], out[256];
    snprintf(src, sizeof src, "%s", test_path("src.gguf"));
    snprintf(out, sizeof out, "%s", test_path("out.gguf"));
    write_source(src);
    size_t len;
    char *before = read_all(src, &len);
    tool_result r = tool_run(
        "edit", src, "-o", out, "--set", "v.u16=65535", "--set", "v.f32=-2.25", "--set",
        "v.arr=[5,-6,7]", "--set", "v.strs=[\"p\",\"q r\"]", "--set", "general.name=renamed",
        "--set", "n.u8:u8=255", "--set", "n.i8:i8=-128", "--set", "n.u16:u16=65535", "--set",
        "n.i16:i16=-32768", "--set", "n.u32:u32=4294967295", "--set", "n.i32:i32=-2147483648",
        "--set", "n.u64:u64=18446744073709551615", "--set", "n.i64:i64=-9223372036854775808",
        "--set", "n.f32:f32=0.1", "--set", "n.f64:f64=1e300", "--set", "n.bool:bool=true",
        "--set", "n.str:str=hello, world", "--set", "n.au8:arr[u8]=[0,255]", "--set",
        "n.af64:arr[f64]=[1.5,-2]", "--set", "n.ab:arr[bool]=[true,false]", "--set",
        "n.as:arr[str]=[\"a\",\"b c\"]", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    tool_result_free(&r);
    cr_assert(same_bytes(src, before, len), "-o leaves the source as it was");
    free(before);

    tm_file *f = open_ok(out);
    /* existing keys keep their types */
    cr_assert_eq(value_of(f, "v.u16", TM_V_U16).as.u, 65535);
    cr_assert_eq(value_of(f, "v.f32", TM_V_F32).as.f, -2.25);
    tm_str s = value_of(f, "general.name", TM_V_STRING).as.s;
    cr_assert(s.len == 7 && memcmp(s.ptr, "renamed", 7) == 0);
    const tm_kv *arr = tm_kv_find(f, "v.arr");
    cr_assert(arr->type == TM_V_ARRAY && arr->elem_type == TM_V_I32 && arr->count == 3);
    tm_value e;
    cr_assert_eq(tm_kv_elem(arr, 1, &e), TM_OK);
    cr_assert_eq(e.as.i, -6);
    /* the entry keeps its place: general.name is still second */
    cr_assert_eq(tm_kv_at(f, 1), tm_kv_find(f, "general.name"));
    /* new keys, each of its type, at the ends of its range */
    cr_assert_eq(value_of(f, "n.u8", TM_V_U8).as.u, 255);
    cr_assert_eq(value_of(f, "n.i8", TM_V_I8).as.i, -128);
    cr_assert_eq(value_of(f, "n.u16", TM_V_U16).as.u, 65535);
    cr_assert_eq(value_of(f, "n.i16", TM_V_I16).as.i, -32768);
    cr_assert_eq(value_of(f, "n.u32", TM_V_U32).as.u, 4294967295u);
    cr_assert_eq(value_of(f, "n.i32", TM_V_I32).as.i, INT32_MIN);
    cr_assert_eq(value_of(f, "n.u64", TM_V_U64).as.u, UINT64_MAX);
    cr_assert_eq(value_of(f, "n.i64", TM_V_I64).as.i, INT64_MIN);
    cr_assert_eq(value_of(f, "n.f32", TM_V_F32).as.f, (double)0.1f);
    cr_assert_eq(value_of(f, "n.f64", TM_V_F64).as.f, 1e300);
    cr_assert_eq(value_of(f, "n.bool", TM_V_BOOL).as.b, true);
    s = value_of(f, "n.str", TM_V_STRING).as.s;
    cr_assert(s.len == 12 && memcmp(s.ptr, "hello, world", 12) == 0);
    const tm_kv *au8 = tm_kv_find(f, "n.au8"), *af = tm_kv_find(f, "n.af64");
    const tm_kv *ab = tm_kv_find(f, "n.ab"), *as = tm_kv_find(f, "n.as");
    cr_assert(au8->elem_type == TM_V_U8 && au8->count == 2 && au8->data[1] == 255);
    cr_assert(af->elem_type == TM_V_F64 && af->count == 2);
    cr_assert_eq(tm_kv_elem(af, 1, &e), TM_OK);
    cr_assert_eq(e.as.f, -2.0);
    cr_assert(ab->elem_type == TM_V_BOOL && ab->count == 2 && ab->data[0] == 1 && ab->data[1] == 0);
    tm_str_iter it;
    cr_assert_eq(tm_kv_strings(as, &it), TM_OK);
    cr_assert(tm_str_next(&it, &s) && s.len == 1 && s.ptr[0] == 'a');
    cr_assert(tm_str_next(&it, &s) && s.len == 3 && memcmp(s.ptr, "b c", 3) == 0);
    cr_assert(!tm_str_next(&it, &s));
    tm_str_iter it2;
    cr_assert_eq(tm_kv_strings(tm_kv_find(f, "v.strs"), &it2), TM_OK);
    cr_assert(!tm_str_next(&it2, NULL), "a NULL out is refused, and the walk does not move");
    cr_assert(tm_str_next(&it2, &s) && s.len == 1 && s.ptr[0] == 'p');
    expect_tensors_unchanged(f);
    tm_close(f);
}

Test(edit, refusals_leave_the_file_as_it_was, .fini = test_cleanup)
{
    char src[256];
    size_t len;
    char *before = fresh_source(src, &len);
    static const struct {
        const char *opt, *arg, *why;
        int status;
    } bad[] = {
        {"--set", "v.u16=65536", "out of range", 2},
        {"--set", "n:u8=-1", "negative", 2},
        {"--set", "n:i8=128", "out of range", 2},
        {"--set", "v.f32=1e39", "out of range", 2},
        {"--set", "v.u16=12abc", "not a whole number", 2},
        {"--set", "n:bool=yes", "not true, false", 2},
        {"--set", "n:arr[u8]=[256]", "element 0 is out of range", 2},
        {"--set", "n:arr[str]=[1]", "element 0 is not a string", 2},
        {"--set", "v.arr=[1", "not a JSON list", 2},
        {"--set", "brand.new=1", "a new key names its type", 2},
        {"--set", "n:x9=1", "is not a type", 2},
        {"--set", "general.alignment:u32=64", "cannot be edited", 2},
        {"--delete", "no.such.key", "no such key", 2},
        {"--rename-tensor", "t0=t1", "a tensor of that name already", 2},
        {"--rename-tensor", "nope=x", "no tensor 'nope'", 2},
        {"--set-file", "v.u16=/etc/hostname", "not a string", 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tool_result r = tool_run("edit", src, bad[i].opt, bad[i].arg, NULL);
        cr_expect_eq(r.status, bad[i].status, "%s %s: %d %s", bad[i].opt, bad[i].arg, r.status,
                     r.err);
        cr_expect(strstr(r.err, bad[i].why), "%s %s: '%s' lacks '%s'", bad[i].opt, bad[i].arg,
                  r.err, bad[i].why);
        tool_result_free(&r);
        cr_assert(same_bytes(src, before, len), "%s %s changed the file", bad[i].opt, bad[i].arg);
    }
    /* a read-only file is not replaced in place (root could) */
    cr_assert_eq(chmod(src, 0444), 0);
    tool_result ro = tool_run("edit", src, "--set", "general.name=x", NULL);
    cr_expect_eq(ro.status, 1, "%s", ro.err);
    cr_expect(strstr(ro.err, "read-only"), "%s", ro.err);
    tool_result_free(&ro);
    cr_assert(same_bytes(src, before, len));
    cr_assert_eq(chmod(src, 0644), 0);
    /* -o naming the source itself is refused: -o never writes over the input */
    tool_result r = tool_run("edit", src, "-o", src, "--set", "general.name=x", NULL);
    cr_expect_eq(r.status, 1, "%s", r.err);
    tool_result_free(&r);
    cr_assert(same_bytes(src, before, len));
    free(before);
}

Test(edit, set_file_delete_and_rename_in_place, .fini = test_cleanup)
{
    char src[256], tmpl[256];
    snprintf(src, sizeof src, "%s", test_path("src.gguf"));
    snprintf(tmpl, sizeof tmpl, "%s", test_path("template.jinja"));
    write_source(src);
    FILE *t = fopen(tmpl, "w");
    static const char text[] = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}";
    fputs(text, t);
    fclose(t);
    struct stat before;
    cr_assert_eq(stat(src, &before), 0);
    tool_result r = tool_run("edit", src, "--set-file", "tokenizer.chat_template=", NULL);
    cr_assert_eq(r.status, 2, "an empty PATH is refused");
    tool_result_free(&r);
    char set_file[300];
    snprintf(set_file, sizeof set_file, "tokenizer.chat_template=%s", tmpl);
    r = tool_run("edit", src, "--set-file", set_file, "--delete", "v.arr", "--rename-tensor",
                 "t0=token_embd.weight", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "the data section moves"), "the header grew: %s", r.out);
    tool_result_free(&r);
    tm_file *f = open_ok(src);
    tm_str s = value_of(f, "tokenizer.chat_template", TM_V_STRING).as.s;
    cr_assert(s.len == strlen(text) && memcmp(s.ptr, text, s.len) == 0);
    cr_assert_null(tm_kv_find(f, "v.arr"));
    cr_assert_null(tm_tensor_find(f, "t0"));
    const tm_tensor *t0 = tm_tensor_find(f, "token_embd.weight");
    cr_assert_not_null(t0);
    cr_assert_eq(memcmp(t0->data, tensor_values[0], sizeof tensor_values[0]), 0);
    tm_close(f);
    struct stat after;
    cr_assert_eq(stat(src, &after), 0);
    cr_assert_neq(after.st_ino, before.st_ino, "replaced by a rename, not written over");
}

/* An equal-length change fits before the data: every tensor byte stays at its file offset. */
Test(edit, an_equal_length_change_keeps_the_data_in_place, .fini = test_cleanup)
{
    char src[256];
    size_t len;
    char *before = fresh_source(src, &len);
    tool_result r = tool_run("edit", src, "--set", "general.name=MODEL", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "every tensor byte stays where it was"), "%s", r.out);
    tool_result_free(&r);
    size_t n;
    char *after = read_all(src, &n);
    cr_assert_eq(n, len);
    /* everything but the five bytes of the name is the same, in the same place */
    size_t differ = 0;
    for (size_t i = 0; i < n; i++)
        differ += before[i] != after[i];
    cr_assert_eq(differ, 5);
    free(before);
    free(after);
}

/* Run the tool with argv; with fsize_limit, under RLIMIT_FSIZE with SIGXFSZ ignored; with
 * fail_at, with the failing shim preloaded. Returns the exit status (128 + a signal). */
static int run_limited(rlim_t fsize_limit, long fail_at, char *const argv[])
{
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        if (fsize_limit) {
            struct rlimit rl = {fsize_limit, fsize_limit};
            signal(SIGXFSZ, SIG_IGN); /* a write past the limit fails with EFBIG instead */
            setrlimit(RLIMIT_FSIZE, &rl);
        }
        if (fail_at) {
            char n[32], asan[512];
            snprintf(n, sizeof n, "%ld", fail_at);
            setenv("TM_FAIL_AT", n, 1);
            setenv("LD_PRELOAD", getenv("TM_FAIL_SHIM"), 1);
            /* the shim comes before a sanitizer runtime in the preload list */
            snprintf(asan, sizeof asan, "%s:verify_asan_link_order=0",
                     getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "");
            setenv("ASAN_OPTIONS", asan, 1);
        }
        execv(getenv("TM_TOOL"), argv);
        _exit(127);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int files_in(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

Test(edit, in_place_under_a_file_size_limit, .fini = test_cleanup)
{
    char src[256];
    size_t len;
    char *before = fresh_source(src, &len);
    char *argv[] = {"tensormap", "edit", src, "--set", "general.name=a longer name than before",
                    NULL};
    /* the new file stops at 8 KiB, in the middle of the tensor data */
    cr_assert_eq(run_limited(8192, 0, argv), 1);
    cr_assert(same_bytes(src, before, len), "the original is intact");
    cr_assert_eq(files_in(test_dir()), 1, "no temporary file is left");
    free(before);
}

Test(edit, a_write_failure_at_every_step_leaves_the_original, .fini = test_cleanup)
{
    cr_assert_not_null(getenv("TM_FAIL_SHIM"), "run the tests through make");
    char src[256];
    snprintf(src, sizeof src, "%s", test_path("src.gguf"));
    for (int grow = 0; grow < 2; grow++) {
        write_source(src);
        size_t len;
        char *before = read_all(src, &len);
        char *argv[] = {"tensormap", "edit", src, "--set",
                        grow ? "general.name=a name long enough to move the data section"
                             : "general.name=MODEL",
                        NULL};
        long step = 1;
        int status;
        while ((status = run_limited(0, step, argv)) != 0 && step < 200) {
            cr_assert_eq(status, 1, "step %ld: exit %d", step, status);
            cr_assert(same_bytes(src, before, len), "step %ld: the original changed", step);
            cr_assert_eq(files_in(test_dir()), 1, "step %ld: a temporary file was left", step);
            step++;
        }
        cr_assert_eq(status, 0, "the edit never succeeded");
        /* the header write, the tensor copies, the sync and the rename each failed once */
        cr_assert_geq(step, 5, "only %ld steps failed", step - 1);
        tm_file *f = open_ok(src);
        tm_str s = value_of(f, "general.name", TM_V_STRING).as.s;
        cr_assert(s.len == strlen(argv[4]) - 13);
        expect_tensors_unchanged(f);
        tm_close(f);
        free(before);
    }
}
