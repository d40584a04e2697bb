/* fuzz_bwcurve.c - libFuzzer harness: the input is the text cuda/bench/bwcurve.cu prints, as
 * `dkv calibrate --bwcurve FILE` reads it (dkv_calib_add_bwcurve, core/analysis/calib.c); the points it
 * accepts go through the bandwidth-curve fit. */
#include "fuzz_util.h"
#include "analysis/calib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = fuzz_file(0, ".txt", data, size);
    dkv_calib *c = NULL;
    dkv_err err = {0};
    if (dkv_calib_new(&c, &err) != DKV_OK || dkv_calib_set_base(c, "h200", 4.8e12, 9.89e14, &err) != DKV_OK)
        abort();
    if (dkv_calib_add_bwcurve(c, p, &err) == DKV_OK) {
        static dkv_calib_result res;
        if (dkv_calib_fit(c, &res, &err) == DKV_OK && res.n_curve > DKV_CALIB_MAX_CURVE)
            abort();
    } else if (err.msg[0] == '\0') {
        abort();
    }
    dkv_calib_free(c);
    return 0;
}
