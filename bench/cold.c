/* bench/cold: decoding a multi-gigabyte file that is not in the page cache, beside the
 * storage's own ceiling measured in the same run.
 *
 *   cold [--file PATH] [--gib N] [--runs N] [--dir DIR]
 *
 * Without --file it writes DIR/tm-cold-bench.gguf (DIR: TMPDIR or /var/tmp; N GiB, default 4):
 * tensors of about 32 MiB, q4_K and q8_0 in turn, their bytes the golden corpus' ggml-quantized
 * rows tiled (as bench/matvec does), and removes it at the end. Each run evicts the file from
 * the page cache (fsync, then posix_fadvise(POSIX_FADV_DONTNEED) over the whole file; mincore
 * says how much is still resident) before each measurement:
 *   read          read() of the data section, 16 MiB at a time: the storage ceiling
 *   mmap/METHOD   tm_open mapped, every tensor decoded with tm_dequant_tensor (all cores), the
 *                 tensor after it prefetched first (tm_prefetch, TM_PREFETCH_METHOD=METHOD)
 *   pread/METHOD  the same with TM_OPEN_NO_MMAP (the file read as needed)
 * and once warm (the file in the page cache: the decoder's own ceiling). The figures are the
 * median over the runs of each, in GB/s of file bytes (10^9), and each as a share of the
 * same run's read and of the same run's warm decode (how much of the storage's wait is hidden
 * behind decoding). Every decode folds its output into a checksum, the same for every method. */
#include "bench.h"

#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define ROW 4096u             /* elements a row */
#define TENSOR_BYTES (32 * MiB)
#define READ_CHUNK (16 * MiB)
#define MAX_RUNS 15

static void die(const char *what)
{
    fprintf(stderr, "cold bench: %s\n", what);
    exit(1);
}

/* ---- the file --------------------------------------------------------------------------------- */

/* n_gib GiB of tensors, their bytes the corpus' rows: the header by the writer (holes for the
 * data), then each tensor's bytes with pwrite. */
static void write_file(const char *path, unsigned n_gib)
{
    const char *dir = getenv("TM_CORPUS");
    char cpath[512];
    snprintf(cpath, sizeof cpath, "%s/golden/golden-a.gguf", dir ? dir : "../shared/corpus");
    tm_file *corpus, *f;
    tm_error err;
    if (tm_open(cpath, 0, &corpus, &err) != TM_OK)
        die("cannot open the golden corpus (set TM_CORPUS to the corpus directory)");
    const tm_type types[2] = {TM_TYPE_Q4_K, TM_TYPE_Q8_0};
    uint8_t *fill[2];
    uint64_t rows[2], n_bytes[2];
    for (int k = 0; k < 2; k++) {
        const uint64_t row_bytes = ROW / tm_type_block_elems(types[k]) * tm_type_block_bytes(types[k]);
        rows[k] = TENSOR_BYTES / row_bytes;
        n_bytes[k] = rows[k] * row_bytes;
        if (!(fill[k] = malloc(n_bytes[k])) ||
            !bench_fill_w(corpus, types[k], fill[k], n_bytes[k], ROW))
            die("the corpus has no q4_K or q8_0 rows");
    }
    tm_close(corpus);
    const uint64_t n_tensors = (uint64_t)n_gib * GiB / TENSOR_BYTES;
    tm_writer *w;
    if (tm_writer_new(&w, &err) != TM_OK)
        die(err.message);
    for (uint64_t i = 0; i < n_tensors; i++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%" PRIu64 ".weight", i);
        const uint64_t ne[2] = {ROW, rows[i % 2]};
        if (tm_writer_tensor(w, name, types[i % 2], 2, ne, NULL, &err) != TM_OK)
            die(err.message);
    }
    if (tm_writer_finish(w, path, &err) != TM_OK || tm_open(path, 0, &f, &err) != TM_OK)
        die(err.message);
    const int fd = open(path, O_WRONLY);
    if (fd < 0)
        die("cannot open the file written");
    const uint64_t data_start = tm_file_layout(f)->data_start;
    for (uint64_t i = 0; i < n_tensors; i++) {
        const tm_tensor *t = tm_tensor_at(f, i);
        if (pwrite(fd, fill[i % 2], t->n_bytes, (off_t)(data_start + t->offset)) !=
            (ssize_t)t->n_bytes)
            die("write failed (is the disk full?)");
    }
    if (fsync(fd) != 0 || close(fd) != 0)
        die("fsync failed");
    tm_close(f);
    free(fill[0]);
    free(fill[1]);
}

/* Drop the file's pages from the page cache; the share of them still resident after. */
static double evict(const char *path)
{
    const int fd = open(path, O_RDONLY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0)
        die("cannot open the file");
    fsync(fd); /* dirty pages are not dropped */
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), n = ((size_t)sb.st_size + page - 1) / page;
    void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
    unsigned char *vec = malloc(n);
    size_t resident = 0;
    if (map == MAP_FAILED || !vec || mincore(map, (size_t)sb.st_size, vec) != 0)
        die("mincore failed");
    for (size_t i = 0; i < n; i++)
        resident += vec[i] & 1;
    free(vec);
    munmap(map, (size_t)sb.st_size);
    close(fd);
    return (double)resident / (double)n;
}

/* ---- what is timed ----------------------------------------------------------------------------- */

/* read() of bytes [from, size) of the file: the storage's ceiling. */
static double time_read(const char *path, uint64_t from, uint64_t *sum)
{
    uint8_t *buf = malloc(READ_CHUNK);
    const double t0 = bench_now_s();
    const int fd = open(path, O_RDONLY);
    if (!buf || fd < 0 || lseek(fd, (off_t)from, SEEK_SET) < 0)
        die("cannot read the file");
    for (ssize_t n; (n = read(fd, buf, READ_CHUNK)) > 0;)
        *sum += buf[0] + buf[n - 1];
    close(fd);
    const double dt = bench_now_s() - t0;
    free(buf);
    return dt;
}

/* Open, and decode every tensor with tm_dequant_tensor, prefetching the one after it first
 * (method NULL: no prefetch). The output folds into *sum. */
static double time_decode(const char *path, unsigned flags, const char *method, float *out,
                          uint64_t *sum)
{
    if (method)
        setenv("TM_PREFETCH_METHOD", method, 1);
    tm_file *f;
    tm_error err;
    const double t0 = bench_now_s();
    if (tm_open(path, flags, &f, &err) != TM_OK)
        die(err.message);
    const uint64_t n = tm_n_tensors(f);
    for (uint64_t i = 0; i < n; i++) {
        const tm_tensor *t = tm_tensor_at(f, i);
        for (uint64_t j = i == 0 ? 0 : i + 1; method && j <= i + 1 && j < n; j++) {
            const tm_prefetch_range r = {tm_tensor_at(f, j), 0, TM_PREFETCH_TO_END};
            if (tm_prefetch(f, &r, 1, NULL, &err) != TM_OK)
                die(err.message);
        }
        if (tm_dequant_tensor(t, out, 0, &err) != TM_OK)
            die(err.message);
        uint32_t bits;
        for (uint64_t k = 0; k < t->n_elements; k += 4099) {
            memcpy(&bits, &out[k], 4);
            *sum = *sum * 31 + bits;
        }
    }
    tm_close(f);
    unsetenv("TM_PREFETCH_METHOD");
    return bench_now_s() - t0;
}

/* ---- the runs ---------------------------------------------------------------------------------- */

typedef struct mode {
    const char *name;
    unsigned flags;      /* tm_open's */
    const char *method;  /* TM_PREFETCH_METHOD; NULL: no prefetch (and read: no decode) */
    bool decode, warm;
    double s[MAX_RUNS];  /* seconds, each run */
    uint64_t sum;
} mode;

int main(int argc, char **argv)
{
    const char *file = NULL;
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
    unsigned n_gib = 4, runs = 3;
    static const struct option longs[] = {{"file", required_argument, NULL, 'f'},
                                          {"gib", required_argument, NULL, 'g'},
                                          {"runs", required_argument, NULL, 'r'},
                                          {"dir", required_argument, NULL, 'd'},
                                          {NULL, 0, NULL, 0}};
    for (int c; (c = getopt_long(argc, argv, "", longs, NULL)) != -1;) {
        if (c == 'f')
            file = optarg;
        else if (c == 'g')
            n_gib = (unsigned)strtoul(optarg, NULL, 10);
        else if (c == 'r')
            runs = (unsigned)strtoul(optarg, NULL, 10);
        else if (c == 'd')
            dir = optarg;
        else
            die("usage: cold [--file PATH] [--gib N] [--runs N] [--dir DIR]");
    }
    if (runs < 1 || runs > MAX_RUNS || n_gib < 1 || n_gib > 64)
        die("--runs takes 1 to 15, --gib 1 to 64");
    char written[600];
    if (!file) {
        snprintf(written, sizeof written, "%s/tm-cold-bench.gguf", dir);
        file = written;
        printf("writing   %s (%u GiB of q4_K and q8_0)\n", file, n_gib);
        fflush(stdout);
        write_file(file, n_gib);
    }
    double load[3];
    char date[32];
    bench_load_and_date(load, date);
    bench_print_cpu();
    printf("date      %s, load average %.2f %.2f %.2f at the start\n", date, load[0], load[1],
           load[2]);

    tm_file *f;
    tm_error err;
    if (tm_open(file, 0, &f, &err) != TM_OK)
        die(err.message);
    const uint64_t data_start = tm_file_layout(f)->data_start, size = tm_file_layout(f)->file_size;
    uint64_t most = 0;
    for (uint64_t i = 0; i < tm_n_tensors(f); i++)
        most = tm_tensor_at(f, i)->n_elements > most ? tm_tensor_at(f, i)->n_elements : most;
    printf("file      %s: %" PRIu64 " bytes, %" PRIu64 " tensors\n", file, size, tm_n_tensors(f));
    tm_close(f);
    float *out = malloc(most * sizeof *out);
    if (!out)
        die("out of memory");
    memset(out, 0, most * sizeof *out); /* its pages are there before the first decode */

    mode modes[] = {
        {"read", 0, NULL, false, false, {0}, 0},
        {"mmap/none", 0, NULL, true, false, {0}, 0},
        {"mmap/madvise", 0, "madvise", true, false, {0}, 0},
        {"mmap/fadvise", 0, "fadvise", true, false, {0}, 0},
        {"mmap/thread", 0, "thread", true, false, {0}, 0},
        {"pread/none", TM_OPEN_NO_MMAP, NULL, true, false, {0}, 0},
        {"pread/fadvise", TM_OPEN_NO_MMAP, "fadvise", true, false, {0}, 0},
        {"warm mmap/none", 0, NULL, true, true, {0}, 0},
    };
    const size_t n_modes = sizeof modes / sizeof *modes;
    double worst_resident = 0;
    for (unsigned r = 0; r < runs; r++) {
        for (size_t m = 0; m < n_modes; m++) {
            mode *md = &modes[m];
            if (md->warm) { /* the file read in once, then decoded from the cache */
                uint64_t ignore = 0;
                time_read(file, 0, &ignore);
            } else {
                const double resident = evict(file);
                worst_resident = resident > worst_resident ? resident : worst_resident;
            }
            uint64_t sum = 0;
            md->s[r] = md->decode ? time_decode(file, md->flags, md->method, out, &sum)
                                  : time_read(file, data_start, &sum);
            if (md->decode && r > 0 && m > 1 && sum != modes[1].sum)
                die("a decode's checksum differs from mmap/none's");
            md->sum = sum;
        }
        fprintf(stderr, "run %u of %u done\n", r + 1, runs);
    }
    bench_load_and_date(load, date);
    printf("evicted   at most %.2f%% of the file's pages resident after eviction (mincore)\n",
           100 * worst_resident);
    printf("load      %.2f %.2f %.2f at the end\n", load[0], load[1], load[2]);
    printf("\n%-16s %10s %10s %14s %14s   (medians of %u runs; GB = 10^9 bytes of the file)\n",
           "mode", "seconds", "GB/s", "share of read", "share of warm", runs);
    const double bytes = (double)(size - data_start);
    for (size_t m = 0; m < n_modes; m++) {
        const mode *md = &modes[m];
        double of_read[MAX_RUNS], of_warm[MAX_RUNS], secs[MAX_RUNS];
        for (unsigned r = 0; r < runs; r++) { /* each against the same run's */
            of_read[r] = modes[0].s[r] / md->s[r];
            of_warm[r] = modes[n_modes - 1].s[r] / md->s[r];
            secs[r] = md->s[r];
        }
        const double s = bench_median(secs, (int)runs, NULL);
        printf("%-16s %10.3f %10.3f %14.3f %14.3f\n", md->name, s, bytes / s / 1e9,
               bench_median(of_read, (int)runs, NULL), bench_median(of_warm, (int)runs, NULL));
    }
    free(out);
    if (file == written && unlink(written) != 0)
        die("cannot remove the file written");
    return 0;
}
