/* tokenizer.h - text <-> token ids for models whose tokenizer dkv knows.
 *
 * dkv knows one tokenizer, "byte" (the project's tiny dLLM, docs/MODELS.md): ids 0..255 are the
 * bytes of the text, DKV_TOK_BYTE_MASK (256) is the mask token, DKV_TOK_BYTE_END (257) the
 * end/pad token; ids above are reserved (the vocabulary is padded to 264).  Real checkpoints
 * (LLaDA-8B, Dream) have "none": their users tokenize with their own tools and give dkv token ids
 * (workload prompts with a `tokens` field, docs/WORKLOADS.md).
 *
 * It lives in workload because turning prompt text into requests is where it is needed; the model
 * preset names it (field `tokenizer`), and the Lua layer joins the two.  Pure computation.
 *
 *     dkv_tokenizer t;  dkv_err err = {0};
 *     dkv_tokenizer_init(&t, DKV_TOKENIZER_BYTE, 264, 256, &err);
 *     uint32_t ids[64];  size_t n;
 *     dkv_tok_encode(&t, "hi", 2, ids, 64, &n, &err);        // n = 2: 104 105
 *     char text[64];
 *     dkv_tok_decode(&t, ids, n, text, sizeof text);          // "hi"
 */
#ifndef DKV_WORKLOAD_TOKENIZER_H
#define DKV_WORKLOAD_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "util/names.h"
#include "util/status.h"

#define DKV_TOK_BYTE_MASK 256u
#define DKV_TOK_BYTE_END  257u
#define DKV_TOK_NONE      UINT32_MAX   /* a position that holds no token (never unmasked) */

typedef enum dkv_tokenizer_kind {
    DKV_TOKENIZER_NONE = 0,   /* token ids only */
    DKV_TOKENIZER_BYTE
} dkv_tokenizer_kind;

typedef struct dkv_tokenizer {
    dkv_tokenizer_kind kind;
    uint32_t vocab;     /* the model's vocabulary size */
    uint32_t mask_id;   /* the model's mask token */
    uint32_t end_id;    /* byte: 257; none: UINT32_MAX */
} dkv_tokenizer;

/* "none" or "byte" (the names table, util/names.h); DKV_EINVAL naming the choices otherwise. */
extern const dkv_names dkv_tokenizer_names;
dkv_status  dkv_tokenizer_parse(const char *name, dkv_tokenizer_kind *out, dkv_err *err);
const char *dkv_tokenizer_name(dkv_tokenizer_kind k);

/* Fills t for a model of the given vocabulary and mask id.  "byte" needs vocab >= 258 and
 * mask_id == 256 (DKV_EINVAL with both values otherwise). */
dkv_status dkv_tokenizer_init(dkv_tokenizer *t, dkv_tokenizer_kind kind, uint32_t vocab, uint32_t mask_id,
                              dkv_err *err);

/* Encodes len bytes of text into at most cap ids (*n of them).  DKV_EUNSUPPORTED for "none"
 * (the message says to give token ids), DKV_ERANGE when cap is too small. */
dkv_status dkv_tok_encode(const dkv_tokenizer *t, const char *text, size_t len, uint32_t *ids, size_t cap,
                          size_t *n, dkv_err *err);

/* Decodes n ids into out (cap bytes, always NUL-terminated when cap > 0) and returns the text's
 * length (what it would be with room enough, as snprintf).  byte: ids < 256 are their bytes;
 * the end token ends the text; the mask token is written "_" and any other id (reserved, or
 * DKV_TOK_NONE) as U+FFFD (3 bytes).  "none" writes nothing and returns 0. */
size_t dkv_tok_decode(const dkv_tokenizer *t, const uint32_t *ids, size_t n, char *out, size_t cap);

#endif
