/* bench/open: how long tm_open takes on a header shaped like qwen2.5 7B q4_K_M's (152,064 token
 * strings, a 152,064-entry token-type array, 151,387 merges, 34 entries, 339 tensor infos,
 * 4,677,120,000 bytes of tensor data left as a sparse hole), against the ceiling of copying
 * the header's bytes once with memcpy. One sample = tm_open + one tm_tensor_find + tm_close.
 * The file is written to $TMPDIR (or /tmp) with the project's writer and removed at the end. */
#include "../examples/qwen2_model.h"
#include "bench.h"

#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { WARMUP = 20, SAMPLES = 200, COPY_SAMPLES = 200 };

/* The chapter's qwen2.5:7b-instruct-q4_K_M: its tensors add up to this many bytes. */
#define QWEN25_7B_TENSOR_BYTES UINT64_C(4677120000)

static double now_ms(void) { return bench_now_s() * 1e3; }

/* min and median of n samples (sorts them) */
static void summarise(double *v, int n, double *min, double *median)
{
    *median = bench_median(v, n, min);
}

static int write_model(const char *path)
{
    const qwen2_model m = {
        .name = "Qwen2.5 7B Instruct (header only)", .size_label = "7B",
        .n_block = 28, .n_embd = 3584, .n_head = 28, .n_head_kv = 4, .n_ff = 18944,
        .n_ctx = 32768, .n_vocab = 152064, .n_merges = 151387, .file_type = 15,
        .embd = TM_TYPE_Q4_K, .output = TM_TYPE_Q6_K, .attn = TM_TYPE_Q4_K,
        .attn_v = {TM_TYPE_Q4_K, TM_TYPE_Q6_K}, .ffn_gate_up = TM_TYPE_Q4_K,
        .ffn_down = {TM_TYPE_Q4_K, TM_TYPE_Q6_K}, .seed = 7,
    };
    tm_error err = {0};
    tm_writer *w = NULL;
    double t0 = now_ms();
    tm_status st = tm_writer_new(&w, &err);
    if (st == TM_OK)
        st = qwen2_write_kv(w, &m, &err);
    if (st == TM_OK)
        st = qwen2_write_tensors(w, &m, NULL, NULL, &err);
    if (st == TM_OK)
        st = tm_writer_finish(w, path, &err);
    else
        tm_writer_free(w);
    if (st != TM_OK) {
        fprintf(stderr, "bench/open: writing %s: %s\n", path, err.message);
        return -1;
    }
    printf("written   %s in %.1f ms (sparse: the tensor data is a hole)\n", path, now_ms() - t0);
    return 0;
}

/* The file must be the shape it claims, or the times mean nothing. */
static int check_shape(const tm_file *f)
{
    const tm_layout *l = tm_file_layout(f);
    const tm_kv *tokens = tm_kv_find(f, "tokenizer.ggml.tokens");
    const tm_kv *merges = tm_kv_find(f, "tokenizer.ggml.merges");
    if (l->n_kv != 34 || l->n_tensors != 339 || !tokens || tokens->count != 152064 || !merges ||
        merges->count != 151387 || l->tensors_end != QWEN25_7B_TENSOR_BYTES) {
        fprintf(stderr, "bench/open: the file is not 7B-shaped (%llu entries, %llu tensors, "
                        "%llu tensor bytes)\n", (unsigned long long)l->n_kv,
                (unsigned long long)l->n_tensors, (unsigned long long)l->tensors_end);
        return -1;
    }
    printf("file      %llu bytes: header %llu (qwen2.5 7B q4_K_M's: 5953935), %llu entries, "
           "%llu tensors,\n          tensor data %llu (qwen2.5 7B q4_K_M's: %llu)\n",
           (unsigned long long)l->file_size, (unsigned long long)l->infos_end,
           (unsigned long long)l->n_kv, (unsigned long long)l->n_tensors,
           (unsigned long long)l->tensors_end, (unsigned long long)QWEN25_7B_TENSOR_BYTES);
    return 0;
}

static int time_open(const char *path, uint64_t header_bytes)
{
    static double t[SAMPLES];
    tm_error err = {0};
    for (int i = 0; i < WARMUP + SAMPLES; i++) {
        tm_file *f = NULL;
        double t0 = now_ms();
        if (tm_open(path, 0, &f, &err) != TM_OK) {
            fprintf(stderr, "bench/open: %s: %s\n", path, err.message);
            return -1;
        }
        const tm_tensor *x = tm_tensor_find(f, "blk.27.ffn_down.weight");
        tm_close(f);
        double dt = now_ms() - t0;
        if (!x) {
            fprintf(stderr, "bench/open: blk.27.ffn_down.weight not found\n");
            return -1;
        }
        if (i >= WARMUP)
            t[i - WARMUP] = dt;
    }
    double min, median;
    summarise(t, SAMPLES, &min, &median);
    printf("open      tm_open + tm_tensor_find + tm_close, %d samples after %d warm-up:\n"
           "          min %.3f ms, median %.3f ms, %.0f opens/s at the median, %.2f GB/s of "
           "header at the min\n", SAMPLES, WARMUP, min, median, 1e3 / median,
           (double)header_bytes / (min * 1e6));
    /* Judged on the minimum, as lz4's bench keeps the fastest: on a shared machine the median
     * also measures everyone else's load. Both are printed. */
    printf("target    < 2 ms (minimum): %s\n", min < 2.0 ? "met" : "NOT met");
    return 0;
}

/* The ceiling: the header's bytes copied once, from the same page-cache mapping tm_open
 * reads, into memory already touched. No reader that looks at every byte can beat it. */
static int time_copy(const char *path, uint64_t header_bytes)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    void *map = fd >= 0 ? mmap(NULL, (size_t)header_bytes, PROT_READ, MAP_PRIVATE, fd, 0)
                        : MAP_FAILED;
    char *dst = malloc((size_t)header_bytes);
    if (fd >= 0)
        close(fd);
    if (map == MAP_FAILED || !dst) {
        fprintf(stderr, "bench/open: cannot map or copy the header of %s\n", path);
        free(dst);
        return -1;
    }
    static double t[COPY_SAMPLES];
    memset(dst, 1, (size_t)header_bytes);
    unsigned sum = 0;
    for (int i = 0; i < WARMUP + COPY_SAMPLES; i++) {
        double t0 = now_ms();
        memcpy(dst, map, (size_t)header_bytes);
        sum += (unsigned char)dst[(size_t)i * 4099 % header_bytes]; /* keep the copy alive */
        double dt = now_ms() - t0;
        if (i >= WARMUP)
            t[i - WARMUP] = dt;
    }
    double min, median;
    summarise(t, COPY_SAMPLES, &min, &median);
    printf("ceiling   memcpy of the %llu header bytes: min %.3f ms, median %.3f ms (%.2f GB/s; "
           "check %u)\n", (unsigned long long)header_bytes, min, median,
           (double)header_bytes / (min * 1e6), sum);
    munmap(map, (size_t)header_bytes);
    free(dst);
    return 0;
}

/* Heap held by one open file: it should follow the entry and tensor counts, not the header's
 * 6 MB (mallinfo2 counts what malloc has handed out; the mapping itself is not heap). */
static int memory_of_open(const char *path)
{
    tm_error err = {0};
    tm_file *f = NULL;
    size_t before = mallinfo2().uordblks;
    if (tm_open(path, 0, &f, &err) != TM_OK) {
        fprintf(stderr, "bench/open: %s: %s\n", path, err.message);
        return -1;
    }
    size_t held = mallinfo2().uordblks - before;
    int rc = check_shape(f);
    const tm_layout *l = tm_file_layout(f);
    printf("memory    one open file holds %zu bytes of heap: %.0f per entry or tensor\n", held,
           (double)held / (double)(l->n_kv + l->n_tensors));
    tm_close(f);
    return rc;
}

int main(void)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/tensormap-bench-open-%ld.gguf", dir && *dir ? dir : "/tmp",
             (long)getpid());
    bench_print_cpu();
    if (write_model(path) != 0)
        return 1;
    int rc = memory_of_open(path);
    tm_file *f = NULL;
    uint64_t header_bytes = 0;
    if (rc == 0 && tm_open(path, 0, &f, NULL) == TM_OK) {
        header_bytes = tm_file_layout(f)->data_start;
        tm_close(f);
    }
    if (rc == 0)
        rc = time_open(path, header_bytes);
    if (rc == 0)
        rc = time_copy(path, header_bytes);
    unlink(path);
    return rc == 0 ? 0 : 1;
}
