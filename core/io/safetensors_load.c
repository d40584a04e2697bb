/* safetensors_load.c - a checkpoint's shards into the reference weights (dkv_st_load_weights):
 * the one place that turns weight files into the weights a backend receives at set-up. */
#include "io/safetensors.h"

#include <stdlib.h>

dkv_status dkv_st_load_weights(const char *const *paths, uint32_t n_paths, const dkv_model *m, float rms_eps,
                               dkv_ref_weights **out, dkv_err *err)
{
    *out = NULL;
    if (!paths || n_paths == 0)
        return dkv_err_set(err, DKV_EINVAL, "weights: no safetensors file given");
    dkv_st **f = calloc(n_paths, sizeof *f);
    dkv_ref_weights *rw = NULL;
    dkv_status st = f ? DKV_OK : dkv_err_set(err, DKV_ENOMEM, "weights: out of host memory");
    for (uint32_t i = 0; st == DKV_OK && i < n_paths; i++)
        st = dkv_st_open(paths[i], &f[i], err);
    dkv_st_naming naming = DKV_ST_NAMING_LLADA;
    if (st == DKV_OK)
        st = dkv_st_detect_naming(f, n_paths, &naming, err);
    if (st == DKV_OK)
        st = dkv_ref_weights_new(m, rms_eps, &rw, err);
    if (st == DKV_OK)
        st = dkv_st_load_ref(f, n_paths, naming, rw, NULL, err);
    for (uint32_t i = 0; f && i < n_paths; i++)
        dkv_st_close(f[i]);
    free(f);
    if (st != DKV_OK) {
        dkv_ref_weights_free(rw);
        dkv_err_prefix(err, "weights");
        return st;
    }
    *out = rw;
    return DKV_OK;
}
