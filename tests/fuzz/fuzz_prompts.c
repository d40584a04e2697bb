/* fuzz_prompts.c - libFuzzer harness: the input is a prompts file (JSONL with "text" or "tokens" per
 * line, core/workload/prompts.c), read with the byte tokenizer and with none, and with a prompt_max
 * that cuts prompts; every request's tokens are checked against the vocabulary. */
#include "fuzz_util.h"
#include "workload/tokenizer.h"
#include "workload/workload.h"

static void read_prompts(const char *path, const dkv_tokenizer *tok, uint32_t prompt_max)
{
    dkv_prompts_cfg cfg = {.tok = tok, .vocab = 512, .gen = 8, .interval_s = 0.5};
    dkv_workload_opts o;
    dkv_workload_opts_default(&o);
    o.prompt_max = prompt_max;
    dkv_workload *w = NULL;
    dkv_err err = {0};
    if (dkv_workload_prompts(path, &cfg, &o, &w, &err) != DKV_OK) {
        if (w != NULL || err.msg[0] == '\0')
            abort();
        return;
    }
    for (size_t i = 0; i < dkv_workload_count(w); i++) {
        const dkv_request *r = dkv_workload_get(w, i);
        if (!r || r->prompt_tokens == 0 || !r->tokens || r->gen_tokens == 0 ||
            (prompt_max && r->prompt_tokens > prompt_max))
            abort();
        for (uint32_t k = 0; k < r->prompt_tokens; k++)
            if (r->tokens[k] >= cfg.vocab)
                abort();   /* every id was checked against the vocabulary */
    }
    dkv_workload_free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = fuzz_file(0, ".jsonl", data, size);
    dkv_tokenizer byte_tok;
    dkv_err err = {0};
    if (dkv_tokenizer_init(&byte_tok, DKV_TOKENIZER_BYTE, 512, 256, &err) != DKV_OK)
        abort();
    read_prompts(p, &byte_tok, 0);
    read_prompts(p, &byte_tok, 5);
    read_prompts(p, NULL, 0);
    return 0;
}
