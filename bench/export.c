/* bench/export: `tensormap export` against the rate at which the same tensors decode to memory
 * with all threads (tm_dequant_tensor into one reused buffer), measured in the same run.
 *
 * The model: 32 q4_K tensors of 4096 x 4096 (288 MiB of blocks, 2.15 GB as float32) whose blocks
 * are ggml's own quantized rows from the golden corpus (q4_K.rows.weight), tiled; the file is
 * written with the project's writer into DIR (default $TMPDIR or /tmp). Each export runs the
 * tool (argv[1], default build/tensormap) as a user would, fsync and rename included, into DIR.
 * A second ceiling, also measured here: writing the same number of bytes from a 1 MiB buffer to
 * a new file in DIR and syncing it, which no export can beat whatever its decoder does.
 * Medians of SAMPLES runs after one warm-up each. */
#include "bench.h"

#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { N_TENSORS = 32, ROWS = 4096, COLS = 4096, SAMPLES = 3 };
#define GOLDEN "../shared/corpus/golden/golden-a.gguf"

/* The model's blocks: golden q4_K rows repeated to fill n bytes. */
static uint8_t *tiled_blocks(size_t n)
{
    tm_file *g;
    tm_error err = {0};
    if (tm_open(GOLDEN, TM_OPEN_DEFAULT, &g, &err) != TM_OK) {
        fprintf(stderr, "bench/export: %s (run from the project's root)\n", err.message);
        return NULL;
    }
    const tm_tensor *t = tm_tensor_find(g, "q4_K.rows.weight");
    uint8_t *p = t ? malloc(n) : NULL;
    for (size_t i = 0; p && i < n; i += t->n_bytes)
        memcpy(p + i, t->data, n - i < t->n_bytes ? n - i : t->n_bytes);
    tm_close(g);
    return p;
}

static int write_model(const char *path, const uint8_t *blocks)
{
    tm_writer *w;
    tm_error err = {0};
    tm_status st = tm_writer_new(&w, &err);
    const uint64_t ne[2] = {COLS, ROWS};
    for (int i = 0; st == TM_OK && i < N_TENSORS; i++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%d.ffn_up.weight", i);
        st = tm_writer_tensor(w, name, TM_TYPE_Q4_K, 2, ne, blocks, &err);
    }
    if (st == TM_OK)
        st = tm_writer_finish(w, path, &err);
    else
        tm_writer_free(w);
    if (st != TM_OK)
        fprintf(stderr, "bench/export: writing %s: %s\n", path, err.message);
    return st == TM_OK ? 0 : -1;
}

/* Seconds to decode every tensor of the file once, all threads, into one buffer. */
static double decode_all(const tm_file *f, float *buf)
{
    double t0 = bench_now_s();
    for (uint64_t i = 0; i < tm_n_tensors(f); i++)
        if (tm_dequant_tensor(tm_tensor_at(f, i), buf, 0, NULL) != TM_OK)
            return -1;
    return bench_now_s() - t0;
}

/* Seconds to write n bytes from a 1 MiB buffer into a new file at path and fsync it. */
static double write_ceiling(const char *path, uint64_t n)
{
    static char chunk[1 << 20];
    memset(chunk, 1, sizeof chunk);
    double t0 = bench_now_s();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    for (uint64_t done = 0; fd >= 0 && done < n; done += sizeof chunk)
        if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk)
            return -1;
    if (fd < 0 || fsync(fd) != 0 || close(fd) != 0)
        return -1;
    double dt = bench_now_s() - t0;
    unlink(path);
    return dt;
}

static double run_export(char *tool, char *model, char *out, char *dtype)
{
    char *argv[] = {tool, "export", "--dtype", dtype, model, out, NULL};
    pid_t pid;
    int status;
    double t0 = bench_now_s();
    if (posix_spawn(&pid, tool, NULL, NULL, argv, environ) != 0 || waitpid(pid, &status, 0) < 0 ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    return bench_now_s() - t0;
}

int main(int argc, char **argv)
{
    char default_tool[] = "build/tensormap", f32[] = "f32", bf16[] = "bf16";
    char *tool = argc > 1 ? argv[1] : default_tool;
    const char *dir = argc > 2 ? argv[2] : getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR")
                                                                                   : "/tmp";
    char model[4096], out[4096];
    snprintf(model, sizeof model, "%s/tensormap-bench-export-%ld.gguf", dir, (long)getpid());
    snprintf(out, sizeof out, "%s/tensormap-bench-export-%ld.safetensors", dir, (long)getpid());
    bench_print_cpu();
    printf("threads   %ld online CPUs\n", sysconf(_SC_NPROCESSORS_ONLN));
    const size_t tensor_bytes = (size_t)ROWS * COLS / 256 * tm_type_block_bytes(TM_TYPE_Q4_K);
    uint8_t *blocks = tiled_blocks(tensor_bytes);
    float *buf = malloc((size_t)ROWS * COLS * sizeof(float));
    if (!blocks || !buf || write_model(model, blocks) != 0)
        return 1;
    tm_file *f;
    tm_error err = {0};
    if (tm_open(model, TM_OPEN_DEFAULT, &f, &err) != TM_OK) {
        fprintf(stderr, "bench/export: %s\n", err.message);
        return 1;
    }
    const double in_mib = (double)tensor_bytes * N_TENSORS / (1 << 20);
    const double out_gb = (double)ROWS * COLS * N_TENSORS * 4 / 1e9;
    printf("model     %d q4_K tensors of %d x %d: %.0f MiB of blocks, %.2f GB as float32, in %s\n",
           N_TENSORS, COLS, ROWS, in_mib, out_gb, dir);
    double dec[SAMPLES], wr[SAMPLES], exp32[SAMPLES], exp16[SAMPLES];
    int rc = decode_all(f, buf) < 0; /* warm-up: pages of the model in the page cache */
    for (int i = 0; !rc && i < SAMPLES; i++)
        rc = (dec[i] = decode_all(f, buf)) < 0;
    for (int i = 0; !rc && i < SAMPLES; i++)
        rc = (wr[i] = write_ceiling(out, (uint64_t)(out_gb * 1e9))) < 0;
    rc = rc || run_export(tool, model, out, f32) < 0;
    for (int i = 0; !rc && i < SAMPLES; i++)
        rc = (exp32[i] = run_export(tool, model, out, f32)) < 0;
    for (int i = 0; !rc && i < SAMPLES; i++)
        rc = (exp16[i] = run_export(tool, model, out, bf16)) < 0;
    if (rc) {
        fprintf(stderr, "bench/export: a decode or an export failed (tool %s)\n", tool);
    } else {
        const double d = bench_median(dec, SAMPLES, NULL), w = bench_median(wr, SAMPLES, NULL),
                     e32 = bench_median(exp32, SAMPLES, NULL), e16 = bench_median(exp16, SAMPLES, NULL);
        printf("decode    to memory, all threads: median %.3f s, %.2f GB/s of float32\n", d,
               out_gb / d);
        printf("write     %.2f GB to a file in %s and fsync: median %.3f s, %.2f GB/s\n", out_gb,
               dir, w, out_gb / w);
        printf("export    --dtype f32:  median %.3f s, %.2f GB/s of float32 decoded: %.2f of the "
               "decode rate, %.2f of the write rate\n", e32, out_gb / e32, d / e32, w / e32);
        printf("export    --dtype bf16: median %.3f s, %.2f GB/s of float32 decoded: %.2f of the "
               "decode rate (it writes half the bytes)\n", e16, out_gb / e16, d / e16);
    }
    tm_close(f);
    unlink(model);
    unlink(out);
    free(blocks);
    free(buf);
    return rc;
}
