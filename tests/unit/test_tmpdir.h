/* test_tmpdir.h - the scratch folder of the unit tests that write files: made under /tmp with
 * mkdtemp, removed with everything in it. */
#ifndef DKV_TEST_TMPDIR_H
#define DKV_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>

#define TEST_TMPDIR_LEN 64

/* dir (TEST_TMPDIR_LEN bytes) becomes a new folder "/tmp/dkv-test-<tag>.XXXXXX".  0, or -1. */
static inline int test_tmpdir_make(char *dir, const char *tag)
{
    snprintf(dir, TEST_TMPDIR_LEN, "/tmp/dkv-test-%s.XXXXXX", tag);
    return mkdtemp(dir) ? 0 : -1;
}

/* Removes dir and everything in it.  0, or -1. */
static inline int test_tmpdir_remove(const char *dir)
{
    char cmd[TEST_TMPDIR_LEN + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The fixture of the tests that write files: a scratch folder and the paths of the files they
 * write in it (path[i] = dir/names[i], i < TEST_FILES_MAX). */
#define TEST_FILES_MAX 4
typedef struct test_files {
    char dir[TEST_TMPDIR_LEN];
    char path[TEST_FILES_MAX][TEST_TMPDIR_LEN + 32];
} test_files;

/* A cmocka group setup: *state = a new test_files ("/tmp/dkv-test-<tag>.XXXXXX" made, n <=
 * TEST_FILES_MAX names).  0, or -1 with nothing left behind. */
static inline int test_files_setup(void **state, const char *tag, const char *const *names, int n)
{
    test_files *x = calloc(1, sizeof *x);
    if (!x || n > TEST_FILES_MAX || test_tmpdir_make(x->dir, tag) != 0) {
        free(x);
        return -1;
    }
    for (int i = 0; i < n; i++)
        snprintf(x->path[i], sizeof x->path[i], "%s/%s", x->dir, names[i]);
    *state = x;
    return 0;
}

/* Its teardown: the folder and everything in it removed, *state freed.  0, or -1. */
static inline int test_files_teardown(void **state)
{
    test_files *x = *state;
    int rc = test_tmpdir_remove(x->dir);
    free(x);
    return rc;
}

#endif
