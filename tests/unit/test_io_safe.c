/* test_io_safe.c - results are never lost (core/io/h5_safe.c): a leftover .tmp is never
 * truncated, set_aside never replaces a file, close_uncommitted leaves the target alone, complete
 * runs are counted from the file, and the room check refuses before the disk is full. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/h5.h"
#include "test_tmpdir.h"

typedef struct fixture {
    char dir[TEST_TMPDIR_LEN];
    char path[128], tmp[140];
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx || test_tmpdir_make(fx->dir, "io-safe") != 0) {
        free(fx);
        return -1;
    }
    snprintf(fx->path, sizeof fx->path, "%s/out.h5", fx->dir);
    snprintf(fx->tmp, sizeof fx->tmp, "%s.tmp", fx->path);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    int rc = test_tmpdir_remove(fx->dir);
    free(fx);
    return rc;
}

static long file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

static void write_file(const char *p, const char *text)
{
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* One run with a status; complete runs go through run_end. */
static void one_run(dkv_h5 *f, const char *name, bool complete)
{
    dkv_err err = {0};
    dkv_h5_run *run;
    assert_int_equal(dkv_h5_run_begin(f, name, &run, &err), DKV_OK);
    assert_int_equal(dkv_h5_attr_str(run, NULL, "status", complete ? "complete" : "failed", &err), DKV_OK);
    assert_int_equal(dkv_h5_attr_f64(run, "summary", "x", 1.5, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_end(run, &err), DKV_OK);
}

static void test_leftover_tmp_not_truncated(void **state)
{
    fixture *fx = *state;
    write_file(fx->tmp, "the only copy of a killed run's results");
    long before = file_size(fx->tmp);
    dkv_err err = {0};
    dkv_h5 *f = NULL;
    assert_int_equal(dkv_h5_create(fx->path, &f, &err), DKV_EIO);
    assert_null(f);
    assert_non_null(strstr(err.msg, "out.h5.tmp' exists"));
    assert_int_equal(file_size(fx->tmp), before);
}

static void test_set_aside_never_replaces(void **state)
{
    fixture *fx = *state;
    char kept[256], want[256];
    dkv_err err = {0};
    write_file(fx->tmp, "first");
    assert_int_equal(dkv_h5_set_aside(fx->tmp, fx->path, ".partial", kept, sizeof kept, &err), DKV_OK);
    snprintf(want, sizeof want, "%s.partial", fx->path);
    assert_string_equal(kept, want);
    assert_int_equal(file_size(fx->tmp), -1);
    write_file(fx->tmp, "second!");
    assert_int_equal(dkv_h5_set_aside(fx->tmp, fx->path, ".partial", kept, sizeof kept, &err), DKV_OK);
    snprintf(want, sizeof want, "%s.partial.2", fx->path);
    assert_string_equal(kept, want);
    snprintf(want, sizeof want, "%s.partial", fx->path);
    assert_int_equal(file_size(want), 5);   /* the first one is untouched */
    assert_int_equal(file_size(kept), 7);
    /* a missing source is an error that names it */
    assert_int_equal(dkv_h5_set_aside(fx->tmp, fx->path, ".partial", kept, sizeof kept, &err), DKV_EIO);
    assert_non_null(strstr(err.msg, "out.h5.tmp"));
}

static void test_uncommitted_close_keeps_target(void **state)
{
    fixture *fx = *state;
    write_file(fx->path, "old results");
    dkv_err err = {0};
    dkv_h5 *f;
    assert_int_equal(dkv_h5_create(fx->path, &f, &err), DKV_OK);
    one_run(f, "a", true);
    one_run(f, "b", true);
    one_run(f, "c", false);
    char *tmp = NULL;
    assert_int_equal(dkv_h5_close_uncommitted(f, &tmp, &err), DKV_OK);
    assert_string_equal(tmp, fx->tmp);
    assert_int_equal(file_size(fx->path), 11);   /* "old results" */
    size_t complete = 9, total = 9;
    assert_int_equal(dkv_h5_count_complete(tmp, &complete, &total, &err), DKV_OK);
    assert_int_equal(complete, 2);
    assert_int_equal(total, 3);
    free(tmp);
    /* garbage is not counted as anything */
    write_file(fx->path, "old results");
    assert_int_not_equal(dkv_h5_count_complete(fx->path, &complete, &total, &err), DKV_OK);
    assert_int_equal(complete, 0);
}

/* Under a file size limit a little above the file, the next run is refused before a write
 * fails half-way (which can damage earlier runs), and the file keeps its runs. */
static void test_room_check(void **state)
{
    fixture *fx = *state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dkv_err err = {0};
        dkv_h5 *f;
        if (dkv_h5_create(fx->path, &f, &err) != DKV_OK)
            _exit(2);
        one_run(f, "a", true);
        struct rlimit rl = {(rlim_t)file_size(fx->tmp) + 4096, RLIM_INFINITY};
        rl.rlim_max = rl.rlim_cur;
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(3);
        dkv_h5_run *run;
        dkv_status st = dkv_h5_run_begin(f, "b", &run, &err);
        if (st != DKV_EIO || !strstr(err.msg, "ulimit -f"))
            _exit(4);
        char *tmp;
        _exit(dkv_h5_close_uncommitted(f, &tmp, &err) == DKV_OK ? 0 : 5);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    dkv_err err = {0};
    size_t complete, total;
    assert_int_equal(dkv_h5_count_complete(fx->tmp, &complete, &total, &err), DKV_OK);
    assert_int_equal(complete, 1);
    /* check_space names both sizes */
    assert_int_equal(dkv_h5_check_space(fx->path, (uint64_t)1 << 62, &err), DKV_EIO);
    assert_non_null(strstr(err.msg, "not enough space"));
    assert_int_equal(dkv_h5_check_space(fx->path, 1, &err), DKV_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_leftover_tmp_not_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_aside_never_replaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uncommitted_close_keeps_target, setup, teardown),
        cmocka_unit_test_setup_teardown(test_room_check, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
