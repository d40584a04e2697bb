/* fuzz_azure.c - libFuzzer harness: the input is a azure trace file (core/workload). */
#include "fuzz_workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_workload(data, size, ".csv", DKV_FMT_AZURE);
}
