/* fuzz_vidur.c - libFuzzer harness: the input is a vidur trace file (core/workload). */
#include "fuzz_workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_workload(data, size, ".csv", DKV_FMT_VIDUR);
}
