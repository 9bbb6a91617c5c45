/* An output path through a symlink that another user owns, in a sticky world-writable directory
 * (/tmp), is refused whatever fs.protected_symlinks says: that user may have planted it to send
 * our output over a file of ours. The kernel's own rule decides: a link there is followed when
 * it belongs to the caller or to the directory's owner. The links are made here and given to
 * another uid with lchown, which needs root (the tests run as root; otherwise they say so). */
#include "support/test_cli.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(planted_links, .fini = test_cleanup);

enum { OTHER_UID = 12345 };

static void need_root(void)
{
    if (geteuid() != 0)
        cr_skip_test("giving a symlink to another user (lchown) needs root");
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

static char *text_of(const char *path) { return read_all(path, NULL); }

/* A small model to dump from. */
static const char *write_model(void)
{
    static const float v[16] = {1, 2, 3};
    const char *path = test_path("m.gguf");
    tm_writer *w;
    tm_error err = {0};
    const uint64_t ne[1] = {16};
    cr_assert_eq(tm_writer_new(&w, &err), TM_OK);
    cr_assert_eq(tm_writer_tensor(w, "v", TM_TYPE_F32, 1, ne, v, &err), TM_OK);
    cr_assert_eq(tm_writer_finish(w, path, &err), TM_OK, "%s", err.message);
    return path;
}

/* DIR (mode 01777, owned by dir_uid) holding LINK -> ../mine.txt, owned by link_uid; mine.txt
 * holds "precious". Returns the link's path. */
static const char *plant(uid_t dir_uid, uid_t link_uid, mode_t dir_mode)
{
    static char dir[512], link[600];
    snprintf(dir, sizeof dir, "%s", test_path("shared"));
    cr_assert_eq(mkdir(dir, 0700), 0);
    cr_assert_eq(chmod(dir, dir_mode), 0); /* not through the umask */
    cr_assert_eq(chown(dir, dir_uid, dir_uid), 0);
    write_text(test_path("mine.txt"), "precious");
    snprintf(link, sizeof link, "%s/out.npy", dir);
    cr_assert_eq(symlink("../mine.txt", link), 0);
    cr_assert_eq(lchown(link, link_uid, link_uid), 0);
    return link;
}

Test(planted_links, another_users_link_in_a_sticky_directory_is_not_followed)
{
    need_root();
    const char *model = write_model(), *link = plant(0, OTHER_UID, 01777);
    tool_result r = tool_run("dump", model, "v", "-o", link, NULL);
    cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "symlink owned by another user (uid 12345)") &&
                  strstr(r.err, "sticky world-writable directory"),
              "%s", r.err);
    tool_result_free(&r);
    char *kept = text_of(test_path("mine.txt"));
    cr_expect_str_eq(kept, "precious", "the link's target was written over");
    free(kept);
    struct stat st;
    cr_expect(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "the link is gone");
}

/* A directory on the way that is such a link is refused too (shared/d -> ..: the output would
 * land beside mine.txt, replacing it). */
Test(planted_links, a_planted_directory_link_on_the_way_is_not_followed)
{
    need_root();
    const char *model = write_model();
    plant(0, OTHER_UID, 01777);
    const char *dlink = test_path("shared/d");
    cr_assert_eq(symlink("..", dlink), 0);
    cr_assert_eq(lchown(dlink, OTHER_UID, OTHER_UID), 0);
    char out[600];
    snprintf(out, sizeof out, "%s/mine.txt", dlink);
    tool_result r = tool_run("dump", model, "v", "-o", out, "--format", "raw", NULL);
    cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "shared/d is a symlink owned by another user"), "%s", r.err);
    tool_result_free(&r);
    char *kept = text_of(test_path("mine.txt"));
    cr_expect_str_eq(kept, "precious", "written through the planted directory link");
    free(kept);
}

/* The library applies the rule itself (every writer's output goes through tm_outfile_open). */
Test(planted_links, tm_outfile_open_refuses_it)
{
    need_root();
    const char *link = plant(0, OTHER_UID, 01777);
    tm_outfile *o = NULL;
    tm_error err = {0};
    cr_expect_eq(tm_outfile_open(&o, link, &err), TM_IO);
    cr_expect_null(o);
    cr_expect(strstr(err.message, "not following it"), "%s", err.message);
}

/* What the kernel allows stays allowed: the caller's own link there, a link owned by the
 * directory's owner, and another user's link in a directory that is not sticky. */
static void expect_followed(uid_t dir_uid, uid_t link_uid, mode_t dir_mode)
{
    const char *model = write_model(), *link = plant(dir_uid, link_uid, dir_mode);
    tool_result r = tool_run("dump", model, "v", "-o", link, "--format", "raw", NULL);
    cr_expect_eq(r.status, 0, "dir uid %u mode %o, link uid %u: exit %d: %s", (unsigned)dir_uid,
                 (unsigned)dir_mode, (unsigned)link_uid, r.status, r.err);
    tool_result_free(&r);
    struct stat st;
    cr_assert_eq(stat(test_path("mine.txt"), &st), 0);
    cr_expect_eq(st.st_size, 16 * 4, "the link's target is the dump");
}

Test(planted_links, the_callers_own_link_is_followed)
{
    need_root();
    expect_followed(OTHER_UID, 0, 01777);
}

Test(planted_links, the_directory_owners_link_is_followed)
{
    need_root();
    expect_followed(OTHER_UID, OTHER_UID, 01777);
}

Test(planted_links, a_link_in_a_directory_that_is_not_sticky_is_followed)
{
    need_root();
    expect_followed(0, OTHER_UID, 0777);
}
