/* fuzz_mooncake.c - libFuzzer harness: the input is a mooncake trace file (core/workload). */
#include "fuzz_workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_workload(data, size, ".jsonl", DKV_FMT_MOONCAKE);
}
