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

#endif
