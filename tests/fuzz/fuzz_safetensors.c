/* fuzz_safetensors.c - libFuzzer harness: the input is a .safetensors file (core/io/safetensors.c):
 * 8-byte header length, JSON header, data.  Every tensor it accepts is looked up by name and, when
 * small, converted to f32 (which reads its bytes from the mapping). */
#include "fuzz_util.h"
#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = fuzz_file(0, ".safetensors", data, size);
    dkv_st *st = NULL;
    dkv_err err = {0};
    if (dkv_st_open(p, &st, &err) != DKV_OK) {
        if (st != NULL || err.msg[0] == '\0')
            abort();
        return 0;
    }
    float buf[256];
    for (uint32_t i = 0; i < dkv_st_count(st); i++) {
        const dkv_st_tensor *t = dkv_st_at(st, i);
        if (!t || dkv_st_find(st, t->name) == NULL)
            abort();
        const uint8_t *d = dkv_st_data(st, t);
        if (t->end > t->begin && d == NULL)
            abort();
        for (uint64_t k = t->begin; d && k < t->end; k++)
            (void)*(volatile const uint8_t *)(d + (k - t->begin));   /* in the mapping (ASan would see) */
        if (t->numel <= 256)
            dkv_st_read_f32(st, t, buf, t->numel, &err);
    }
    dkv_st_metadata(st, "format");
    dkv_st_close(st);
    return 0;
}
