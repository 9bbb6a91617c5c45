/* tensormap hash: llama.cpp's llama-gguf-hash (examples/gguf-hash/gguf-hash.cpp) over any file
 * the tool opens. Only tensor data is hashed (never the header), tensor by tensor in file order:
 * a line per tensor and kind, then the whole model (every tensor's bytes one after another) and
 * the UUIDv5 of those bytes in llama.cpp's namespace. A manifest of such lines is checked with
 * --check, with llama-gguf-hash's lines and exit codes. The hashes are libxxhash's and
 * OpenSSL's; the bytes are streamed through them in pieces of at most PIECE, fetched into one
 * buffer for a remote file, never a whole tensor at once. */
#include "../cli/cli.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static const char help[] =
    "usage: tensormap hash [--xxh64] [--sha1] [--sha256] [--uuid] [--all] [--no-layer]\n"
    "                      [--check MANIFEST] FILE\n"
    "\n"
    "Hash the tensor data of the file as llama.cpp's llama-gguf-hash does, in its output\n"
    "format: one line per tensor and hash, `KIND  HASH  FILE:TENSOR`, then one line per hash of\n"
    "the whole model, `KIND  HASH  FILE`, over every tensor's bytes in file order (the header is\n"
    "not hashed, so a model whose metadata was edited hashes the same). A split GGUF set, opened\n"
    "through its first shard, hashes as one model: the same lines as the merged file. A URL's\n"
    "tensors are fetched in pieces of 16 MiB.\n"
    "\n"
    "  --xxh64           xxHash64, seed 0 (the hash when none is asked for)\n"
    "  --sha1            SHA-1\n"
    "  --sha256          SHA-256\n"
    "  --all             xxh64, sha1 and sha256\n"
    "  --uuid            the model's UUIDv5: SHA-1 over llama.cpp's namespace\n"
    "                    (ef001206-dadc-5f6d-a15f-3359e577d4e5) and every tensor's bytes\n"
    "  --no-layer        the whole-model lines only\n"
    "  -c, --check MANIFEST\n"
    "                    check against lines this command (or llama-gguf-hash) wrote: each\n"
    "                    line is followed by `-  Ok`, `-  Mismatch` or `-  Not Found`; with no\n"
    "                    hash asked for, the strongest the manifest has is used. Entries are\n"
    "                    matched by kind and by name as printed, FILE as given here included\n"
    "\n"
    "Names from the file are printed escaped (\\n, \\xNN, ...). Exit status: 0 when hashed (or\n"
    "checked and everything found agrees), 1 when a hash does not match the manifest or the\n"
    "file cannot be read, 2 for bad usage, 3 when the manifest names nothing of this file, 4\n"
    "when it holds no hash kind known here, 5 when it cannot be read (llama-gguf-hash's\n"
    "codes).\n";

enum { PIECE = 16 << 20 };

/* The kinds in llama-gguf-hash's order, which is the order of its lines. */
enum { K_XXH64, K_SHA1, K_SHA256, K_UUID, N_KINDS };
static const char *const kind_names[N_KINDS] = {"xxh64", "sha1", "sha256", "uuid"};

/* llama-gguf-hash's exit codes (2, its "mismatch", it never returns: a mismatch is 1). */
enum { EXIT_MISMATCH = 1, EXIT_MISSING_ENTRY = 3, EXIT_UNKNOWN_HASH = 4, EXIT_MANIFEST = 5 };

/* uuid.uuid5(uuid.NAMESPACE_URL, 'en.wikipedia.org/wiki/Llama.cpp'), llama.cpp's namespace */
static const unsigned char uuid_namespace[16] = {0xef, 0x00, 0x12, 0x06, 0xda, 0xdc, 0x5f, 0x6d,
                                                 0xa1, 0x5f, 0x33, 0x59, 0xe5, 0x77, 0xd4, 0xe5};

/* One running hash of one kind. */
typedef struct digest {
    int kind;
    XXH64_state_t *xxh;
    EVP_MD_CTX *md;
} digest;

static bool digest_start(digest *d, int kind)
{
    d->kind = kind;
    if (kind == K_XXH64)
        return (d->xxh || (d->xxh = XXH64_createState())) && XXH64_reset(d->xxh, 0) == XXH_OK;
    if (!d->md && !(d->md = EVP_MD_CTX_new()))
        return false;
    if (!EVP_DigestInit_ex(d->md, kind == K_SHA256 ? EVP_sha256() : EVP_sha1(), NULL))
        return false;
    /* a UUIDv5 is SHA-1 over the namespace's 16 bytes, then the name (RFC 9562, 5.5) */
    return kind != K_UUID || EVP_DigestUpdate(d->md, uuid_namespace, sizeof uuid_namespace);
}

static bool digest_add(digest *d, const void *p, size_t n)
{
    return d->kind == K_XXH64 ? XXH64_update(d->xxh, p, n) == XXH_OK
                            : EVP_DigestUpdate(d->md, p, n) == 1;
}

/* The hash as llama-gguf-hash prints it: lowercase hex (xxh64 big-endian, as its canonical
 * form), a UUID as 8-4-4-4-12 with the version and variant bits set. */
static bool digest_text(digest *d, char out[2 * EVP_MAX_MD_SIZE + 1])
{
    unsigned char b[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    if (d->kind == K_XXH64) {
        XXH64_canonical_t c;
        XXH64_canonicalFromHash(&c, XXH64_digest(d->xxh));
        memcpy(b, c.digest, n = sizeof c.digest);
    } else if (!EVP_DigestFinal_ex(d->md, b, &n)) {
        return false;
    }
    if (d->kind == K_UUID) {
        b[6] = (unsigned char)((b[6] & 0x0f) | 0x50); /* version 5 */
        b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* variant 0b10 */
        n = 16;
    }
    char *o = out;
    for (unsigned i = 0; i < n; i++) {
        if (d->kind == K_UUID && (i == 4 || i == 6 || i == 8 || i == 10))
            *o++ = '-';
        o += sprintf(o, "%02x", b[i]);
    }
    return true;
}

static void digest_free(digest *d)
{
    XXH64_freeState(d->xxh);
    EVP_MD_CTX_free(d->md);
}

/* ---- the manifest ---------------------------------------------------------------------------- */

/* A line `KIND HASH NAME` (whitespace-separated, as llama-gguf-hash reads it with >>). */
typedef struct entry {
    int kind;
    char *hash, *name;
} entry;

typedef struct manifest {
    const char *path;
    entry *e;
    size_t n;
    bool has[N_KINDS];    /* a line starts with this kind (llama-gguf-hash's "manifest type") */
    bool tensor_found, tensor_mismatch, model_found, model_mismatch;
} manifest;

static int kind_of(const char *word)
{
    for (int k = 0; k < N_KINDS; k++)
        if (word && strcmp(word, kind_names[k]) == 0)
            return k;
    return -1;
}

static void manifest_free(manifest *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->e[i].hash);
        free(m->e[i].name);
    }
    free(m->e);
}

/* Read every line (the file's own size bounds what is kept); EXIT_MANIFEST with a message when
 * it cannot be read, CLI_FAIL when out of memory. Lines of an unknown kind are skipped, as
 * llama-gguf-hash skips them. */
static int manifest_read(manifest *m, const char *path)
{
    *m = (manifest){.path = path};
    FILE *in = fopen(path, "r");
    if (!in) {
        cli_errorf("hash: cannot open manifest %s: %s", path, strerror(errno));
        return EXIT_MANIFEST;
    }
    char *line = NULL, *save;
    size_t cap = 0, room = 0;
    int rc = CLI_OK;
    static const char space[] = " \t\n\v\f\r";
    while (rc == CLI_OK && getline(&line, &cap, in) >= 0) {
        int kind = kind_of(strtok_r(line, space, &save));
        const char *hash = strtok_r(NULL, space, &save), *name = strtok_r(NULL, space, &save);
        if (kind < 0)
            continue;
        m->has[kind] = true;
        if (!name)
            continue;
        if (m->n == room) {
            entry *e = realloc(m->e, (room = room ? 2 * room : 64) * sizeof *e);
            if (!e) {
                rc = CLI_FAIL;
                break;
            }
            m->e = e;
        }
        entry *e = &m->e[m->n];
        *e = (entry){kind, strdup(hash), strdup(name)};
        if (!e->hash || !e->name) {
            free(e->hash), free(e->name);
            rc = CLI_FAIL;
            break;
        }
        m->n++;
    }
    if (rc == CLI_OK && ferror(in)) {
        cli_errorf("hash: cannot read manifest %s: %s", path, strerror(errno));
        rc = EXIT_MANIFEST;
    } else if (rc == CLI_FAIL) {
        cli_errorf("hash: out of memory reading manifest %s", path);
    }
    free(line);
    fclose(in);
    return rc;
}

/* llama-gguf-hash's verdict: the first entry of this kind and name decides. */
static const char *manifest_verify(manifest *m, int kind, const char *hash, const char *name,
                                   bool model)
{
    for (size_t i = 0; i < m->n; i++) {
        if (m->e[i].kind != kind || strcmp(m->e[i].name, name) != 0)
            continue;
        bool same = strcmp(m->e[i].hash, hash) == 0;
        *(model ? &m->model_found : &m->tensor_found) = true;
        *(model ? &m->model_mismatch : &m->tensor_mismatch) |= !same;
        return same ? "Ok" : "Mismatch";
    }
    return "Not Found";
}

/* The exit code llama-gguf-hash gives: the model's entries decide when present, any tensor's
 * mismatch fails, and a manifest that names nothing here is "missing entry". */
static int manifest_result(const manifest *m)
{
    if (!m->model_found && !m->tensor_found)
        return EXIT_MISSING_ENTRY;
    return m->model_mismatch || m->tensor_mismatch ? EXIT_MISMATCH : CLI_OK;
}

/* ---- hashing ----------------------------------------------------------------------------- */

/* One output line, with the manifest's verdict when checking. */
static void emit(manifest *m, int kind, digest *d, const char *name, bool model, bool *ok)
{
    char text[2 * EVP_MAX_MD_SIZE + 1];
    if (!digest_text(d, text)) {
        *ok = false;
        return;
    }
    printf("%-8s  %s  %s", kind_names[kind], text, name);
    if (m)
        printf("  -  %s", manifest_verify(m, kind, text, name, model));
    putchar('\n');
}

/* "FILE:TENSOR" as printed (the path and the tensor's name escaped), malloc'ed; NULL when out
 * of memory. A manifest entry is compared with this, so what was printed checks back. */
static char *label(const char *file, const tm_tensor *t)
{
    char *s = NULL;
    size_t n = 0;
    FILE *o = open_memstream(&s, &n);
    if (!o)
        return NULL;
    cli_print_text(o, file);
    if (t) {
        putc(':', o);
        cli_print_str(o, t->name, UINT64_MAX);
    }
    if (fclose(o) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

/* Feed tensor t's bytes, piece by piece, to the tensor's digests (when per_tensor) and the
 * model's. CLI_FAIL after a message naming the tensor when a piece cannot be fetched. */
static int feed(const char *arg, uint64_t i, const tm_tensor *t, const bool *want, digest *tensor,
                bool per_tensor, digest *model, uint8_t *buf, cli_progress *p)
{
    for (uint64_t off = 0; off < t->n_bytes;) {
        size_t len = t->n_bytes - off < PIECE ? (size_t)(t->n_bytes - off) : PIECE;
        tm_error err = {0};
        const uint8_t *bytes = cli_tensor_bytes(t, off, len, buf, &err);
        if (!bytes) {
            char name[160], context[512];
            snprintf(context, sizeof context, "%s: tensor %llu '%s', bytes %llu..%llu", arg,
                     (unsigned long long)i, cli_name(t->name, 96, name, sizeof name),
                     (unsigned long long)off, (unsigned long long)(off + len));
            cli_report(context, &err);
            return CLI_FAIL;
        }
        for (int k = 0; k < N_KINDS; k++) {
            if (!want[k])
                continue;
            if ((per_tensor && k != K_UUID && !digest_add(&tensor[k], bytes, len)) ||
                !digest_add(&model[k], bytes, len)) {
                cli_errorf("%s: %s failed", arg, kind_names[k]);
                return CLI_FAIL;
            }
        }
        off += len;
        cli_progress_add(p, len);
    }
    return CLI_OK;
}

static int hash_file(const tm_file *f, const char *arg, const bool *want, bool per_tensor,
                     manifest *m)
{
    digest tensor[N_KINDS] = {0}, model[N_KINDS] = {0};
    uint8_t *buf = tm_file_is_remote(f) ? malloc(PIECE) : NULL;
    char *file_label = label(arg, NULL);
    bool ok = file_label && (buf || !tm_file_is_remote(f));
    for (int k = 0; ok && k < N_KINDS; k++)
        ok = !want[k] || digest_start(&model[k], k);
    uint64_t total = 0;
    for (uint64_t i = 0; i < tm_n_tensors(f); i++)
        total += tm_tensor_at(f, i)->n_bytes;
    cli_progress p;
    cli_progress_start(&p, "hash", "bytes", total);
    int rc = CLI_OK; /* a failure to start (ok false) is reported after the loop */
    for (uint64_t i = 0; rc == CLI_OK && i < tm_n_tensors(f); i++) {
        const tm_tensor *t = tm_tensor_at(f, i);
        for (int k = 0; ok && per_tensor && k < K_UUID; k++)
            ok = !want[k] || digest_start(&tensor[k], k);
        if (!ok || (rc = feed(arg, i, t, want, tensor, per_tensor, model, buf, &p)) != CLI_OK)
            break;
        char *name = per_tensor ? label(arg, t) : NULL;
        ok = name || !per_tensor;
        for (int k = 0; ok && per_tensor && k < K_UUID; k++)
            if (want[k])
                emit(m, k, &tensor[k], name, false, &ok);
        free(name);
    }
    cli_progress_end(&p);
    for (int k = 0; rc == CLI_OK && ok && k < N_KINDS; k++)
        if (want[k])
            emit(m, k, &model[k], file_label, true, &ok);
    if (rc == CLI_OK && !ok) {
        cli_errorf("%s: out of memory, or a hash failed", arg);
        rc = CLI_FAIL;
    }
    for (int k = 0; k < N_KINDS; k++) {
        digest_free(&tensor[k]);
        digest_free(&model[k]);
    }
    free(file_label);
    free(buf);
    return rc;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"xxh64", no_argument, NULL, 'x'},  {"sha1", no_argument, NULL, '1'},
        {"sha256", no_argument, NULL, '2'}, {"uuid", no_argument, NULL, 'u'},
        {"all", no_argument, NULL, 'a'},    {"no-layer", no_argument, NULL, 'n'},
        {"check", required_argument, NULL, 'c'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    bool want[N_KINDS] = {false}, per_tensor = true;
    const char *manifest_path = NULL;
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "c:h", opts, &cmd_hash)) != -1) {
        switch (c) {
        case 'x': want[K_XXH64] = true; break;
        case '1': want[K_SHA1] = true; break;
        case '2': want[K_SHA256] = true; break;
        case 'u': want[K_UUID] = true; break;
        case 'a': want[K_XXH64] = want[K_SHA1] = want[K_SHA256] = true; break;
        case 'n': per_tensor = false; break;
        case 'c': manifest_path = optarg; break;
        case 'h': return fputs(help, stdout), CLI_OK;
        default: return cli_usage(&cmd_hash);
        }
    }
    int rc = cli_count_args(&cmd_hash, argc - optind, 1, 1);
    if (rc >= 0)
        return rc;
    const char *arg = argv[optind];
    bool any = want[K_XXH64] || want[K_SHA1] || want[K_SHA256] || want[K_UUID];

    manifest m, *check = NULL;
    if (manifest_path) {
        if ((rc = manifest_read(&m, manifest_path)) != CLI_OK)
            return rc;
        check = &m;
        if (!m.has[K_XXH64] && !m.has[K_SHA1] && !m.has[K_SHA256] && !m.has[K_UUID]) {
            cli_errorf("hash: manifest %s has no line of a known hash (xxh64, sha1, sha256, uuid)",
                       manifest_path);
            manifest_free(&m);
            return EXIT_UNKNOWN_HASH;
        }
        fputs("manifest  ", stdout);
        cli_print_text(stdout, manifest_path);
        /* llama-gguf-hash lists them strongest first, and checks the strongest when not told */
        static const int strongest[] = {K_SHA256, K_SHA1, K_XXH64, K_UUID};
        for (size_t i = 0; i < sizeof strongest / sizeof strongest[0]; i++)
            if (m.has[strongest[i]]) {
                printf("  %s", kind_names[strongest[i]]);
                if (!any)
                    want[strongest[i]] = any = true;
            }
        putchar('\n');
    }
    if (!any)
        want[K_XXH64] = true;

    tm_file *f = cli_open(arg, 0);
    rc = f ? hash_file(f, arg, want, per_tensor, check) : CLI_FAIL;
    tm_close(f);
    if (check) {
        if (rc == CLI_OK)
            rc = manifest_result(check);
        static const char *const verdicts[] = {"Success", "Failure", "Failure",
                                               "Manifest Missing Entry"};
        fputs("\nVerification results for ", stdout);
        cli_print_text(stdout, manifest_path);
        printf(" - %s\n", verdicts[rc]);
        manifest_free(check);
    }
    return cli_finish_output(rc);
}

const cli_command cmd_hash = {
    .name = "hash",
    .alias = NULL,
    .summary = "llama-gguf-hash's per-tensor and model hashes (xxh64, sha1, sha256, UUIDv5)",
    .help = help,
    .run = run,
};
