/* h5_append.c - adding tables and attributes to a run copied into a file being written
 * (dkv_h5_run_reopen, dkv_h5_run_unlink; used by analysis/ncu_import.c). */
#include "io/h5_internal.h"

#include <stdlib.h>
#include <string.h>

dkv_status dkv_h5_run_reopen(dkv_h5 *f, const char *name, dkv_h5_run **out, dkv_err *err)
{
    *out = NULL;
    if (!f->writable)
        return dkv_err_set(err, DKV_ESTATE, "h5: '%s' is open read-only", f->path);
    if (f->current)
        return dkv_err_set(err, DKV_ESTATE, "h5: run '%s' is still open (end it before reopening '%s')",
                           f->current->name, name ? name : "");
    if (!name || H5Lexists(f->runs, name, H5P_DEFAULT) <= 0)
        return dkv_err_set(err, DKV_ENOENT, "h5: '%s' has no run '%s'", f->path, name ? name : "");
    dkv_h5_run *r = calloc(1, sizeof *r);
    if (!r || !(r->name = dkv_h5__strdup(name))) {
        free(r);
        return dkv_err_set(err, DKV_ENOMEM, "h5: out of memory");
    }
    r->f = f;
    r->writing = true;
    r->g = H5Gopen2(f->runs, name, H5P_DEFAULT);
    if (r->g < 0) {
        free(r->name);
        free(r);
        return dkv_err_set(err, DKV_EIO, "h5: cannot open run '%s' in '%s'", name, f->path);
    }
    f->current = r;
    *out = r;
    return DKV_OK;
}

dkv_status dkv_h5_run_unlink(dkv_h5_run *run, const char *name, dkv_err *err)
{
    if (!run || !run->writing)
        return dkv_err_set(err, DKV_ESTATE, "h5: '%s': run is not open for writing", name ? name : "");
    if (!name || strchr(name, '/') || H5Lexists(run->g, name, H5P_DEFAULT) <= 0)
        return dkv_err_set(err, DKV_ENOENT, "h5: run '%s' has no '%s'", run->name, name ? name : "");
    for (size_t i = 0; i < run->ntables; i++)
        if (strcmp(run->tables[i]->name, name) == 0)
            return dkv_err_set(err, DKV_ESTATE, "h5: run '%s': table '%s' is open", run->name, name);
    if (H5Ldelete(run->g, name, H5P_DEFAULT) < 0)
        return dkv_err_set(err, DKV_EIO, "h5: run '%s': cannot remove '%s'", run->name, name);
    return DKV_OK;
}

bool dkv_h5_run_has(dkv_h5_run *run, const char *name)
{
    return run && name && !strchr(name, '/') && H5Lexists(run->g, name, H5P_DEFAULT) > 0;
}
