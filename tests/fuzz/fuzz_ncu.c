/* fuzz_ncu.c - libFuzzer harness: the input is Nsight Compute CSV output, as `dkv ncu-import` reads it
 * (core/analysis/ncu.c): parsed, classified and summed per kernel class. */
#include "fuzz_util.h"
#include "analysis/ncu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = fuzz_file(0, ".csv", data, size);
    dkv_ncu_kernel *k = NULL;
    size_t n = 0;
    dkv_err err = {0};
    if (dkv_ncu_read(p, &k, &n, &err) != DKV_OK) {
        if (k != NULL || n != 0 || err.msg[0] == '\0')
            abort();
        return 0;
    }
    dkv_ncu_class_total tot[DKV_NCU_NTOTALS];
    dkv_ncu_totals(k, n, tot);
    for (size_t i = 1; i < n; i++)
        if (k[i].id <= k[i - 1].id)
            abort();   /* one entry per launch, in launch order */
    free(k);
    return 0;
}
