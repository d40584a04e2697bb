/* fuzz_cfg_literal.c - libFuzzer harness: the input is a `config` provenance attribute (a Lua table
 * literal read back from a results file by dkv compare / calibrate), flattened to key/value leaves
 * by dkv_cfg_flatten (core/analysis/compare_cfg.c).  The bytes are copied into a NUL-terminated string,
 * as the HDF5 string attribute arrives. */
#include "fuzz_util.h"
#include "analysis/compare.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    dkv_cfg_kv *kv = NULL;
    size_t n = 0;
    dkv_err err = {0};
    if (dkv_cfg_flatten(s, &kv, &n, &err) == DKV_OK) {
        for (size_t i = 0; i < n; i++)
            if (!kv[i].key || !kv[i].value)
                abort();
        dkv_cfg_kv_free(kv, n);
    } else if (kv != NULL || err.msg[0] == '\0') {
        abort();
    }
    dkv_cmp_workload_fingerprint(s);
    dkv_cmp_config_fingerprint(s);
    free(s);
    return 0;
}
