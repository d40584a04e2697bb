/* test_io.c - the HDF5 results file: tables (write, append, read back), attributes, the
 * temporary name and rename, survival of completed runs when the writer dies, merging. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/h5.h"
#include "util/rng.h"
#include "test_tmpdir.h"

typedef struct rec {
    uint32_t id;
    uint8_t flag;
    uint64_t bytes;
    int32_t delta;
    int64_t t_ns;
    float ratio;
    double latency_s;
    char tag[DKV_H5_STR32_LEN];
} rec;

static const dkv_h5_field REC_FIELDS[] = {
    {"id", DKV_H5_U32, offsetof(rec, id), "", "request id"},
    {"flag", DKV_H5_U8, offsetof(rec, flag), NULL, NULL},
    {"bytes", DKV_H5_U64, offsetof(rec, bytes), "bytes", "allocated bytes"},
    {"delta", DKV_H5_I32, offsetof(rec, delta), "tokens", NULL},
    {"t_ns", DKV_H5_I64, offsetof(rec, t_ns), "ns", "event time"},
    {"ratio", DKV_H5_F32, offsetof(rec, ratio), "", NULL},
    {"latency_s", DKV_H5_F64, offsetof(rec, latency_s), "s", "arrival to completion"},
    {"tag", DKV_H5_STR32, offsetof(rec, tag), "", "memory tag"},
};
#define NREC_FIELDS (sizeof REC_FIELDS / sizeof REC_FIELDS[0])

typedef struct fixture {
    char dir[TEST_TMPDIR_LEN];
    char path[128];
    char tmp[140];
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx)
        return -1;
    if (test_tmpdir_make(fx->dir, "io") != 0) {
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

static int exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static void fill(rec *r, size_t n, uint64_t seed)
{
    dkv_rng g;
    dkv_rng_seed(&g, seed);
    for (size_t i = 0; i < n; i++) {
        memset(&r[i], 0, sizeof r[i]);
        r[i].id = (uint32_t)i;
        r[i].flag = (uint8_t)dkv_rng_below(&g, 2);
        r[i].bytes = dkv_rng_u64(&g);
        r[i].delta = (int32_t)dkv_rng_below(&g, 2000) - 1000;
        r[i].t_ns = (int64_t)dkv_rng_below(&g, 1ULL << 50) - (1LL << 49);
        r[i].ratio = (float)dkv_rng_uniform(&g);
        r[i].latency_s = dkv_rng_exponential(&g, 3.0);
        snprintf(r[i].tag, sizeof r[i].tag, "tag-%u", (unsigned)dkv_rng_below(&g, 100000));
    }
}

/* Writes run `name` with a table of n records from seed, in three appends. */
static void write_run(dkv_h5 *f, const char *name, size_t n, uint64_t seed)
{
    dkv_err err = {0};
    dkv_h5_run *run;
    dkv_h5_table *t;
    rec *r = malloc(n * sizeof *r);
    fill(r, n, seed);
    assert_int_equal(dkv_h5_run_begin(f, name, &run, &err), DKV_OK);
    assert_int_equal(dkv_h5_attr_i64(run, "summary", "n", (int64_t)n, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_create(run, "requests", sizeof(rec), REC_FIELDS, NREC_FIELDS, &t, &err), DKV_OK);
    size_t a = n / 3, b = n / 2;
    assert_int_equal(dkv_h5_table_append(t, r, a, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_append(t, r + a, 0, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_append(t, r + a, b - a, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_append(t, r + b, n - b, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_end(run, &err), DKV_OK);
    free(r);
}

/* Reads run `name` back and compares every record with the ones drawn from seed. */
static void check_run(dkv_h5 *f, const char *name, size_t n, uint64_t seed)
{
    dkv_err err = {0};
    dkv_h5_run *run;
    dkv_h5_table *t;
    assert_int_equal(dkv_h5_run_open(f, name, &run, &err), DKV_OK);
    int64_t nn = 0;
    assert_int_equal(dkv_h5_attr_get_i64(run, "summary", "n", &nn, &err), DKV_OK);
    assert_int_equal(nn, (int64_t)n);
    assert_int_equal(dkv_h5_table_count(run), 1);
    assert_string_equal(dkv_h5_table_name_at(run, 0), "requests");
    assert_int_equal(dkv_h5_table_open(run, "requests", &t, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_nrecords(t), n);
    rec *want = malloc(n * sizeof *want), *got = calloc(n, sizeof *got);
    fill(want, n, seed);
    assert_int_equal(dkv_h5_table_read(t, sizeof(rec), REC_FIELDS, NREC_FIELDS, 0, n, got, &err), DKV_OK);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(got[i].id, want[i].id);
        assert_int_equal(got[i].flag, want[i].flag);
        assert_true(got[i].bytes == want[i].bytes);
        assert_int_equal(got[i].delta, want[i].delta);
        assert_true(got[i].t_ns == want[i].t_ns);
        assert_true(got[i].ratio == want[i].ratio);
        assert_true(got[i].latency_s == want[i].latency_s);
        assert_string_equal(got[i].tag, want[i].tag);
    }
    free(want);
    free(got);
    dkv_h5_table_close(t);
    dkv_h5_run_free(run);
}

static void test_tables_round_trip(void **state)
{
    fixture *fx = *state;
    dkv_err err = {0};
    dkv_h5 *f;
    assert_int_equal(dkv_h5_create(fx->path, &f, &err), DKV_OK);
    assert_string_equal(dkv_h5_path(f), fx->path);
    write_run(f, "a", 10000, 1);   /* several chunks */
    write_run(f, "b", 7, 2);
    assert_int_equal(dkv_h5_close(f, &err), DKV_OK);

    assert_int_equal(dkv_h5_open_read(fx->path, &f, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_count(f), 2);
    assert_string_equal(dkv_h5_run_name_at(f, 0), "a");   /* creation order */
    assert_string_equal(dkv_h5_run_name_at(f, 1), "b");
    assert_null(dkv_h5_run_name_at(f, 2));
    check_run(f, "a", 10000, 1);
    check_run(f, "b", 7, 2);

    /* self-description: names, types, units, docs come from the file */
    dkv_h5_run *run;
    dkv_h5_table *t;
    assert_int_equal(dkv_h5_run_open(f, "a", &run, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_open(run, "requests", &t, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_nfields(t), NREC_FIELDS);
    for (size_t i = 0; i < NREC_FIELDS; i++) {
        dkv_h5_field fd;
        assert_int_equal(dkv_h5_table_field(t, i, &fd, &err), DKV_OK);
        assert_string_equal(fd.name, REC_FIELDS[i].name);
        assert_int_equal(fd.type, REC_FIELDS[i].type);
        assert_string_equal(fd.unit, REC_FIELDS[i].unit ? REC_FIELDS[i].unit : "");
        assert_string_equal(fd.doc, REC_FIELDS[i].doc ? REC_FIELDS[i].doc : "");
    }
    dkv_h5_field fd;
    assert_int_equal(dkv_h5_table_field(t, NREC_FIELDS, &fd, &err), DKV_ERANGE);
    char *order = NULL;
    assert_int_equal(dkv_h5_attr_get_str(run, "requests", "fields", &order, &err), DKV_OK);
    assert_string_equal(order, "id,flag,bytes,delta,t_ns,ratio,latency_s,tag");
    free(order);

    /* a subset in another order and another layout, converted by HDF5 */
    typedef struct sub { double id; char tag[32]; int64_t delta; } sub;
    const dkv_h5_field sf[] = {{"tag", DKV_H5_STR32, offsetof(sub, tag), NULL, NULL},
                               {"delta", DKV_H5_I64, offsetof(sub, delta), NULL, NULL},
                               {"id", DKV_H5_F64, offsetof(sub, id), NULL, NULL}};
    sub s[5];
    rec want[10000];
    fill(want, 10000, 1);
    assert_int_equal(dkv_h5_table_read(t, sizeof(sub), sf, 3, 9995, 5, s, &err), DKV_OK);
    for (int i = 0; i < 5; i++) {
        assert_true(s[i].id == 9995 + i);
        assert_int_equal(s[i].delta, want[9995 + i].delta);
        assert_string_equal(s[i].tag, want[9995 + i].tag);
    }
    double lat[3];
    assert_int_equal(dkv_h5_table_read_f64(t, "latency_s", 10, 3, lat, &err), DKV_OK);
    for (int i = 0; i < 3; i++)
        assert_true(lat[i] == want[10 + i].latency_s);
    assert_int_equal(dkv_h5_table_read_f64(t, "tag", 0, 1, lat, &err), DKV_EFORMAT);
    assert_int_equal(dkv_h5_table_read_f64(t, "nope", 0, 1, lat, &err), DKV_ENOENT);
    assert_non_null(strstr(err.msg, "nope"));
    assert_int_equal(dkv_h5_table_read_f64(t, "latency_s", 9999, 2, lat, &err), DKV_ERANGE);
    dkv_h5_table_close(t);
    assert_int_equal(dkv_h5_table_open(run, "summary", &t, &err), DKV_EFORMAT);
    assert_int_equal(dkv_h5_table_open(run, "missing", &t, &err), DKV_ENOENT);
    dkv_h5_run_free(run);
    assert_int_equal(dkv_h5_run_open(f, "zzz", &run, &err), DKV_ENOENT);
    dkv_h5_close(f, NULL);
}

typedef struct seen {
    int n;
    char keys[16][32];
    int kinds[16];
} seen;

static int collect(const dkv_h5_attr *a, void *ud)
{
    seen *s = ud;
    if (s->n < 16) {
        snprintf(s->keys[s->n], 32, "%s", a->key);
        s->kinds[s->n] = a->kind;
    }
    s->n++;
    return 0;
}

static int stop_first(const dkv_h5_attr *a, void *ud)
{
    (void)a;
    ++*(int *)ud;
    return 1;
}

static void test_attributes(void **state)
{
    fixture *fx = *state;
    dkv_err err = {0};
    dkv_h5 *f;
    dkv_h5_run *run;
    dkv_h5_table *t;
    assert_int_equal(dkv_h5_create(fx->path, &f, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_begin(f, "r", &run, &err), DKV_OK);
    assert_ptr_equal(dkv_h5_current_run(f), run);
    assert_string_equal(dkv_h5_run_name(run), "r");
    assert_int_equal(dkv_h5_attr_str(run, NULL, "host", "node-1", &err), DKV_OK);
    assert_int_equal(dkv_h5_attr_str(run, "", "script", "print('x')\n-- long\n", &err), DKV_OK);
    assert_int_equal(dkv_h5_attr_i64(run, "params", "n", -5, &err), DKV_OK);
    assert_int_equal(dkv_h5_attr_f64(run, "params", "rate", 2.5, &err), DKV_OK);
    assert_int_equal(dkv_h5_attr_f64(run, "params", "rate", 3.5, &err), DKV_OK);  /* replaces */
    double v[3] = {1, 2, 4};
    assert_int_equal(dkv_h5_attr_f64v(run, "summary", "cdf", v, 3, &err), DKV_OK);
    assert_int_equal(dkv_h5_attr_f64v(run, "summary", "empty", v, 0, &err), DKV_EINVAL);
    assert_int_equal(dkv_h5_attr_i64(run, "deep/er/group", "x", 1, &err), DKV_OK);
    assert_int_equal(dkv_h5_attr_i64(run, "/abs", "x", 1, &err), DKV_EINVAL);
    assert_int_equal(dkv_h5_attr_i64(run, "../up", "x", 1, &err), DKV_EINVAL);
    assert_int_equal(dkv_h5_table_create(run, "t", sizeof(rec), REC_FIELDS, 2, &t, &err), DKV_OK);
    assert_int_equal(dkv_h5_attr_str(run, "t", "note", "on a table", &err), DKV_OK);
    assert_int_equal(dkv_h5_close(f, &err), DKV_OK);  /* ends the open run */

    assert_int_equal(dkv_h5_open_read(fx->path, &f, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_open(f, "r", &run, &err), DKV_OK);
    char *s = NULL;
    assert_int_equal(dkv_h5_attr_get_str(run, NULL, "script", &s, &err), DKV_OK);
    assert_string_equal(s, "print('x')\n-- long\n");
    free(s);
    int64_t i = 0;
    double d = 0;
    assert_int_equal(dkv_h5_attr_get_i64(run, "params", "n", &i, &err), DKV_OK);
    assert_int_equal(i, -5);
    assert_int_equal(dkv_h5_attr_get_f64(run, "params", "n", &d, &err), DKV_OK);  /* int as double */
    assert_true(d == -5.0);
    assert_int_equal(dkv_h5_attr_get_f64(run, "params", "rate", &d, &err), DKV_OK);
    assert_true(d == 3.5);
    assert_int_equal(dkv_h5_attr_get_i64(run, "params", "rate", &i, &err), DKV_EFORMAT);
    assert_int_equal(dkv_h5_attr_get_str(run, "params", "n", &s, &err), DKV_EFORMAT);
    assert_null(s);
    assert_int_equal(dkv_h5_attr_get_f64(run, "params", "absent", &d, &err), DKV_ENOENT);
    assert_non_null(strstr(err.msg, "absent"));
    i = -1;
    assert_int_equal(dkv_h5_attr_get_i64(run, "deep/er/group", "x", &i, &err), DKV_OK);
    assert_int_equal(i, 1);
    assert_int_equal(dkv_h5_attr_get_str(run, NULL, "host", &s, &err), DKV_OK);   /* written with a NULL group */
    assert_string_equal(s, "node-1");
    free(s);
    assert_int_equal(dkv_h5_attr_get_str(run, "t", "note", &s, &err), DKV_OK);
    assert_string_equal(s, "on a table");
    free(s);

    seen sn = {0};
    assert_int_equal(dkv_h5_attr_foreach(run, "params", collect, &sn, &err), DKV_OK);
    assert_int_equal(sn.n, 2);
    assert_string_equal(sn.keys[0], "n");  /* name order */
    assert_int_equal(sn.kinds[0], DKV_H5_ATTR_I64);
    assert_string_equal(sn.keys[1], "rate");
    assert_int_equal(sn.kinds[1], DKV_H5_ATTR_F64);
    memset(&sn, 0, sizeof sn);
    assert_int_equal(dkv_h5_attr_foreach(run, "summary", collect, &sn, &err), DKV_OK);
    assert_int_equal(sn.n, 1);
    assert_int_equal(sn.kinds[0], DKV_H5_ATTR_F64V);
    int calls = 0;
    assert_int_equal(dkv_h5_attr_foreach(run, NULL, stop_first, &calls, &err), DKV_OK);
    assert_int_equal(calls, 1);
    assert_int_equal(dkv_h5_attr_foreach(run, "nothing", collect, &sn, &err), DKV_ENOENT);
    dkv_h5_run_free(run);
    dkv_h5_close(f, NULL);
}

static void test_misuse(void **state)
{
    fixture *fx = *state;
    dkv_err err = {0};
    dkv_h5 *f;
    dkv_h5_run *run, *run2;
    dkv_h5_table *t;
    assert_int_equal(dkv_h5_create(fx->path, &f, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_begin(f, "bad/name", &run, &err), DKV_EINVAL);
    assert_int_equal(dkv_h5_run_begin(f, "", &run, &err), DKV_EINVAL);
    assert_int_equal(dkv_h5_run_begin(f, "ok:h200,rate=1.5", &run, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_begin(f, "second", &run2, &err), DKV_ESTATE);
    dkv_h5_field bad[] = {{"x", DKV_H5_F64, 4, "", ""}};
    assert_int_equal(dkv_h5_table_create(run, "t", 8, bad, 1, &t, &err), DKV_EINVAL);  /* past the end */
    assert_non_null(strstr(err.msg, "'x'"));
    dkv_h5_field dup[] = {{"x", DKV_H5_U32, 0, "", ""}, {"x", DKV_H5_U32, 4, "", ""}};
    assert_int_equal(dkv_h5_table_create(run, "t", 8, dup, 2, &t, &err), DKV_EINVAL);
    assert_int_equal(dkv_h5_table_create(run, "summary", 8, dup, 1, &t, &err), DKV_EINVAL);
    assert_int_equal(dkv_h5_table_create(run, "t", 8, dup, 1, &t, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_create(run, "t", 8, dup, 1, &t, &err), DKV_EINVAL);  /* exists */
    assert_int_equal(dkv_h5_run_end(run, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_begin(f, "ok:h200,rate=1.5", &run, &err), DKV_EINVAL);  /* duplicate */
    assert_non_null(strstr(err.msg, "already exists"));
    assert_int_equal(dkv_h5_close(f, &err), DKV_OK);
    /* destructors accept NULL */
    assert_int_equal(dkv_h5_close(NULL, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_end(NULL, &err), DKV_OK);
    dkv_h5_run_free(NULL);
    dkv_h5_table_close(NULL);
    dkv_h5_discard(NULL);
    /* reading something that is not a dkv file */
    char other[160];
    snprintf(other, sizeof other, "%s/plain.txt", fx->dir);
    FILE *fp = fopen(other, "w");
    fputs("not hdf5\n", fp);
    fclose(fp);
    assert_int_equal(dkv_h5_open_read(other, &f, &err), DKV_EFORMAT);
    assert_null(f);
    assert_int_equal(dkv_h5_open_read("/nonexistent/x.h5", &f, &err), DKV_EFORMAT);
    /* a read-only file refuses runs */
    assert_int_equal(dkv_h5_open_read(fx->path, &f, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_begin(f, "x", &run, &err), DKV_ESTATE);
    dkv_h5_close(f, NULL);
    /* creating in a missing folder fails cleanly */
    assert_int_equal(dkv_h5_create("/nonexistent-dir/x.h5", &f, &err), DKV_EIO);
    assert_null(f);
}

static void test_tmp_then_rename(void **state)
{
    fixture *fx = *state;
    dkv_err err = {0};
    dkv_h5 *f;
    assert_int_equal(dkv_h5_create(fx->path, &f, &err), DKV_OK);
    write_run(f, "one", 5, 3);
    assert_true(exists(fx->tmp));
    assert_false(exists(fx->path));
    assert_int_equal(dkv_h5_close(f, &err), DKV_OK);
    assert_false(exists(fx->tmp));
    assert_true(exists(fx->path));
    /* a second file of the same name replaces the first only at close */
    assert_int_equal(dkv_h5_create(fx->path, &f, &err), DKV_OK);
    write_run(f, "two", 5, 4);
    assert_true(exists(fx->path));
    dkv_h5 *r;
    assert_int_equal(dkv_h5_open_read(fx->path, &r, &err), DKV_OK);
    assert_string_equal(dkv_h5_run_name_at(r, 0), "one");
    dkv_h5_close(r, NULL);
    assert_int_equal(dkv_h5_close(f, &err), DKV_OK);
    assert_int_equal(dkv_h5_open_read(fx->path, &r, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_count(r), 1);
    assert_string_equal(dkv_h5_run_name_at(r, 0), "two");
    dkv_h5_close(r, NULL);
    /* discard leaves neither a .tmp nor touches the old file */
    assert_int_equal(dkv_h5_create(fx->path, &f, &err), DKV_OK);
    write_run(f, "three", 5, 5);
    dkv_h5_discard(f);
    assert_false(exists(fx->tmp));
    assert_int_equal(dkv_h5_open_read(fx->path, &r, &err), DKV_OK);
    assert_string_equal(dkv_h5_run_name_at(r, 0), "two");
    dkv_h5_close(r, NULL);
}

/* The writer dies (abort, no close) in the middle of run 4: runs 1-3 are readable from .tmp. */
static void test_completed_runs_survive_abort(void **state)
{
    fixture *fx = *state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dkv_err err = {0};
        dkv_h5 *f;
        if (dkv_h5_create(fx->path, &f, &err) != DKV_OK)
            _exit(3);
        char name[16];
        for (int i = 0; i < 3; i++) {
            snprintf(name, sizeof name, "run%d", i);
            write_run(f, name, 3000, 100 + (uint64_t)i);
        }
        dkv_h5_run *run;
        dkv_h5_table *t;
        rec r[500];
        fill(r, 500, 9);
        dkv_h5_run_begin(f, "partial", &run, &err);
        dkv_h5_table_create(run, "requests", sizeof(rec), REC_FIELDS, NREC_FIELDS, &t, &err);
        dkv_h5_table_append(t, r, 500, &err);
        abort();
    }
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));
    assert_false(exists(fx->path));
    assert_true(exists(fx->tmp));
    dkv_err err = {0};
    dkv_h5 *f;
    /* the .tmp of a dead writer is a readable file with the completed runs */
    assert_int_equal(dkv_h5_open_read(fx->tmp, &f, &err), DKV_OK);
    assert_true(dkv_h5_run_count(f) >= 3);
    check_run(f, "run0", 3000, 100);
    check_run(f, "run1", 3000, 101);
    check_run(f, "run2", 3000, 102);
    dkv_h5_close(f, NULL);
}

static void test_merge(void **state)
{
    fixture *fx = *state;
    dkv_err err = {0};
    char p1[160], p2[160], out[160];
    snprintf(p1, sizeof p1, "%s/s0.h5", fx->dir);
    snprintf(p2, sizeof p2, "%s/s1.h5", fx->dir);
    snprintf(out, sizeof out, "%s/all.h5", fx->dir);
    dkv_h5 *f, *a, *b, *o;
    assert_int_equal(dkv_h5_create(p1, &f, &err), DKV_OK);
    write_run(f, "x0", 50, 10);
    write_run(f, "x1", 60, 11);
    dkv_h5_close(f, NULL);
    assert_int_equal(dkv_h5_create(p2, &f, &err), DKV_OK);
    write_run(f, "y0", 70, 12);
    write_run(f, "x1", 10, 13);  /* clashes with s0's x1 */
    dkv_h5_close(f, NULL);
    assert_int_equal(dkv_h5_open_read(p1, &a, &err), DKV_OK);
    assert_int_equal(dkv_h5_open_read(p2, &b, &err), DKV_OK);
    assert_int_equal(dkv_h5_create(out, &o, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_copy(o, a, "x0", &err), DKV_OK);
    assert_int_equal(dkv_h5_run_copy(o, a, "x1", &err), DKV_OK);
    assert_int_equal(dkv_h5_run_copy(o, b, "y0", &err), DKV_OK);
    assert_int_equal(dkv_h5_run_copy(o, b, "x1", &err), DKV_EINVAL);
    assert_non_null(strstr(err.msg, "x1"));
    assert_int_equal(dkv_h5_run_copy(o, b, "nope", &err), DKV_ENOENT);
    assert_int_equal(dkv_h5_close(o, &err), DKV_OK);
    dkv_h5_close(a, NULL);
    dkv_h5_close(b, NULL);
    assert_int_equal(dkv_h5_open_read(out, &o, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_count(o), 3);
    assert_string_equal(dkv_h5_run_name_at(o, 2), "y0");
    check_run(o, "x0", 50, 10);
    check_run(o, "x1", 60, 11);
    check_run(o, "y0", 70, 12);
    dkv_h5_close(o, NULL);
}

static void test_types(void **state)
{
    (void)state;
    assert_int_equal(dkv_h5_type_size(DKV_H5_U8), 1);
    assert_int_equal(dkv_h5_type_size(DKV_H5_I32), 4);
    assert_int_equal(dkv_h5_type_size(DKV_H5_F64), 8);
    assert_int_equal(dkv_h5_type_size(DKV_H5_STR32), 32);
    assert_string_equal(dkv_h5_type_name(DKV_H5_U64), "u64");
    assert_string_equal(dkv_h5_type_name(DKV_H5_STR32), "str32");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types),
        cmocka_unit_test_setup_teardown(test_tables_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attributes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_misuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tmp_then_rename, setup, teardown),
        cmocka_unit_test_setup_teardown(test_completed_runs_survive_abort, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
