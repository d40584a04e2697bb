/* h5_safe.c - never losing a results file: closing without committing, setting a partial file
 * aside under a free name, counting a file's complete runs, and checking free space first. */
#include "io/h5_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

dkv_status dkv_h5_close_uncommitted(dkv_h5 *f, char **tmp_out, dkv_err *err)
{
    *tmp_out = NULL;
    if (!f)
        return DKV_OK;
    *tmp_out = f->tmp_path ? strdup(f->tmp_path) : NULL;
    f->keep_tmp = true;
    return dkv_h5_close(f, err);
}

static bool exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

dkv_status dkv_h5_set_aside(const char *src, const char *final_path, const char *suffix, char *kept,
                            size_t kept_n, dkv_err *err)
{
    if (kept_n)
        kept[0] = '\0';
    char cand[4200];
    for (int k = 1; k < 1000; k++) {
        if (k == 1)
            snprintf(cand, sizeof cand, "%s%s", final_path, suffix);
        else
            snprintf(cand, sizeof cand, "%s%s.%d", final_path, suffix, k);
        /* link() fails with EEXIST instead of replacing: no race with another writer */
        if (link(src, cand) == 0) {
            if (unlink(src) != 0) {
                int e = errno;
                unlink(cand);
                return dkv_err_set(err, DKV_EIO, "cannot move '%s' to '%s': %s", src, cand, strerror(e));
            }
        } else if (errno == EEXIST) {
            continue;
        } else if (exists(cand)) {
            continue;
        } else if (rename(src, cand) != 0) {   /* a file system without hard links */
            return dkv_err_set(err, DKV_EIO, "cannot move '%s' to '%s': %s", src, cand, strerror(errno));
        }
        snprintf(kept, kept_n, "%s", cand);
        return DKV_OK;
    }
    return dkv_err_set(err, DKV_EIO, "cannot move '%s' aside: '%s%s' .. '%s%s.999' all exist", src, final_path,
                       suffix, final_path, suffix);
}

dkv_status dkv_h5_count_complete(const char *path, size_t *complete, size_t *total, dkv_err *err)
{
    *complete = *total = 0;
    dkv_h5 *f;
    dkv_status st = dkv_h5_open_read(path, &f, err);
    if (st != DKV_OK)
        return st;
    for (size_t i = 0; i < dkv_h5_run_count(f); i++) {
        dkv_h5_run *r;
        char *status = NULL;
        (*total)++;
        if (dkv_h5_run_open(f, dkv_h5_run_name_at(f, i), &r, NULL) != DKV_OK)
            continue;
        if (dkv_h5_attr_get_str(r, NULL, "status", &status, NULL) == DKV_OK && strcmp(status, "complete") == 0)
            (*complete)++;
        free(status);
        dkv_h5_run_free(r);
    }
    return dkv_h5_close(f, err);
}

static uint64_t size_of(const char *p)
{
    struct stat st;
    return p && stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
}

void dkv_h5__note_flush(dkv_h5 *f)
{
    uint64_t now = size_of(f->tmp_path);
    if (now > f->flushed_bytes && now - f->flushed_bytes > f->max_run_bytes)
        f->max_run_bytes = now - f->flushed_bytes;
    f->flushed_bytes = now;
}

dkv_status dkv_h5__check_room(dkv_h5 *f, dkv_err *err)
{
    if (!f->tmp_path)
        return DKV_OK;
    uint64_t need = 2 * f->max_run_bytes > (64u << 10) ? 2 * f->max_run_bytes : (64u << 10);
    uint64_t now = size_of(f->tmp_path);
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && now + need > (uint64_t)rl.rlim_cur)
        return dkv_err_set(err, DKV_EIO,
                           "h5: '%s' is %llu bytes and may not grow past the file size limit of %llu (ulimit -f); "
                           "the next run may need %llu: stopping before a write fails half-way",
                           f->tmp_path, (unsigned long long)now, (unsigned long long)rl.rlim_cur,
                           (unsigned long long)need);
    dkv_err e2 = {0};
    if (dkv_h5_check_space(f->tmp_path, need, &e2) != DKV_OK)
        return dkv_err_set(err, DKV_EIO, "h5: %s (twice the largest run so far, 64 KiB at least): stopping before "
                           "the disk is full", e2.msg);
    return DKV_OK;
}

dkv_status dkv_h5_check_space(const char *path, uint64_t need_bytes, dkv_err *err)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    struct statvfs vfs;
    if (statvfs(dir, &vfs) == 0) {
        uint64_t avail = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
        if (avail < need_bytes)
            return dkv_err_set(err, DKV_EIO,
                               "not enough space in '%s' for '%s': about %llu bytes needed, %llu available",
                               dir, path, (unsigned long long)need_bytes, (unsigned long long)avail);
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (uint64_t)rl.rlim_cur < need_bytes)
        return dkv_err_set(err, DKV_EIO,
                           "'%s' would need about %llu bytes, more than this process's file size limit of %llu "
                           "(ulimit -f)",
                           path, (unsigned long long)need_bytes, (unsigned long long)rl.rlim_cur);
    return DKV_OK;
}
