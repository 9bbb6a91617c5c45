/* Real files damaged in transit ($TM_CORPUS/damaged: every invalid UTF-8 sequence replaced by
 * EF BF BD after a text-mode copy) must be refused with a message naming the entry and the
 * byte offset: no crash, no hang, no allocation sized by the garbage. */
#include <criterion/criterion.h>

#include "tensormap.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp, "%s", path);
    fseek(fp, 0, SEEK_END);
    *len = (size_t)ftell(fp);
    rewind(fp);
    uint8_t *p = malloc(*len);
    cr_assert_eq(fread(p, 1, *len, fp), *len);
    fclose(fp);
    return p;
}

static void check_damaged(const char *name)
{
    const char *corpus = getenv("TM_CORPUS");
    cr_assert_not_null(corpus, "TM_CORPUS is not set (make test sets it)");
    char path[512];
    snprintf(path, sizeof path, "%s/damaged/%s", corpus, name);
    size_t len;
    uint8_t *bytes = slurp(path, &len);

    /* The copy damaged the file at its first replacement sequence: nothing before it is wrong,
     * so the walk cannot have stopped making sense earlier. */
    const uint8_t *first = memmem(bytes, len, "\xef\xbf\xbd", 3);
    cr_assert_not_null(first, "%s has no replacement sequence", name);
    const uint64_t damage_at = (uint64_t)(first - bytes);

    tm_file *f = NULL;
    tm_error err;
    const tm_status st = tm_open(path, TM_OPEN_DEFAULT, &f, &err);
    cr_assert_neq(st, TM_OK, "%s opened", name);
    cr_assert_null(f);
    cr_assert_eq(err.code, st);
    cr_assert_neq(err.offset, TM_NO_OFFSET, "%s: %s", name, err.message);
    cr_assert_geq(err.offset, damage_at, "%s: offset %llu before the damage at %llu: %s", name,
                  (unsigned long long)err.offset, (unsigned long long)damage_at, err.message);
    cr_assert_lt(err.offset, len);
    cr_assert(strstr(err.message, "metadata entry ") || strstr(err.message, "tensor info "),
              "%s: no entry named: %s", name, err.message);
    cr_assert(strstr(err.message, " of "), "%s: no count: %s", name, err.message);
    char at[40];
    snprintf(at, sizeof at, "byte %llu", (unsigned long long)err.offset);
    cr_assert(strstr(err.message, at), "%s: message lacks '%s': %s", name, at, err.message);
    cr_log_info("%s: %s", name, err.message);

    /* The same verdict through the read copy and from a borrowed buffer. */
    tm_error again;
    cr_assert_eq(tm_open(path, TM_OPEN_NO_MMAP, &f, &again), st);
    cr_assert_str_eq(again.message, err.message);
    cr_assert_eq(tm_open_buffer(bytes, len, 0, &f, &again), st);
    cr_assert_eq(again.offset, err.offset);
    free(bytes);
}

/* Every file in the folder, so that files added to the corpus are checked too. */
Test(damaged, every_file_refused_at_the_damage)
{
    const char *corpus = getenv("TM_CORPUS");
    cr_assert_not_null(corpus, "TM_CORPUS is not set (make test sets it)");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/damaged", corpus);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        const size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".gguf") == 0) {
            check_damaged(e->d_name);
            n++;
        }
    }
    closedir(d);
    cr_assert_geq(n, 3, "only %d damaged files in %s", n, dir);
}
