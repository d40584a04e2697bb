/* safetensors.h - reading and writing .safetensors files, and mapping the published LLaDA and
 * Dream tensor names onto the reference model's weights (core/ref).
 *
 * The format (huggingface/safetensors): 8 bytes little-endian u64 N, then N bytes of a JSON
 * object {"__metadata__": {"k": "v", ...}, "<name>": {"dtype": "BF16", "shape": [d0, ...],
 * "data_offsets": [begin, end]}, ...}, padded with spaces, then the data; offsets are bytes
 * relative to the start of the data.  The reader maps the file (mmap) and checks every entry:
 * known dtype, shape product * dtype size == end - begin, offsets inside the file (a short file
 * is reported as truncated), no two tensors overlapping, no duplicate names.  Errors name the
 * file, the tensor and the field.
 *
 *     dkv_st *st;  dkv_err err = {0};
 *     if (dkv_st_open("model-00001-of-00006.safetensors", &st, &err) != DKV_OK) ... err.msg ...
 *     const dkv_st_tensor *t = dkv_st_find(st, "model.transformer.ln_f.weight");
 *     float ln_f[4096];
 *     dkv_st_read_f32(st, t, ln_f, 4096, &err);      // bf16 / f16 / f32 -> f32
 *     dkv_st_close(st);
 *
 * Tensor names (checked against modeling_llada.py of GSAI-ML/LLaDA-8B-Instruct, LLaDAModelLM ->
 * model.transformer, LLaDALlamaBlock; and against Qwen2 naming that Dream-v0 uses):
 *   dkv (ref)              LLaDA                                          Dream (Qwen2)
 *   wte                    model.transformer.wte.weight                   model.embed_tokens.weight
 *   layers.i.attn_norm     model.transformer.blocks.i.attn_norm.weight    model.layers.i.input_layernorm.weight
 *   layers.i.wq / wk / wv  model.transformer.blocks.i.{q,k,v}_proj.weight model.layers.i.self_attn.{q,k,v}_proj.weight
 *   layers.i.bq / bk / bv  model.transformer.blocks.i.{q,k,v}_proj.bias   model.layers.i.self_attn.{q,k,v}_proj.bias
 *   layers.i.wo            model.transformer.blocks.i.attn_out.weight     model.layers.i.self_attn.o_proj.weight
 *   layers.i.ffn_norm      model.transformer.blocks.i.ff_norm.weight      model.layers.i.post_attention_layernorm.weight
 *   layers.i.w_gate        model.transformer.blocks.i.ff_proj.weight      model.layers.i.mlp.gate_proj.weight
 *   layers.i.w_up          model.transformer.blocks.i.up_proj.weight      model.layers.i.mlp.up_proj.weight
 *   layers.i.w_down        model.transformer.blocks.i.ff_out.weight       model.layers.i.mlp.down_proj.weight
 *   ln_f                   model.transformer.ln_f.weight                  model.norm.weight
 *   lm_head                model.transformer.ff_out.weight                lm_head.weight
 * LLaDA applies SiLU to ff_proj and multiplies by up_proj (x, x_up = ff_proj(x), up_proj(x);
 * x = act(x) * x_up; ff_out(x)); with weight_tying the LM head is wte (no transformer.ff_out).
 */
#ifndef DKV_IO_SAFETENSORS_H
#define DKV_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "ref/ref.h"
#include "util/status.h"

#define DKV_ST_MAX_DIMS 8
#define DKV_ST_MAX_HEADER (100u * 1024u * 1024u)   /* the format's own limit */

typedef enum dkv_st_dtype {
    DKV_ST_F32 = 0,
    DKV_ST_F16,
    DKV_ST_BF16,
    DKV_ST_OTHER    /* a valid safetensors dtype that dkv does not convert (F64, I32, ...) */
} dkv_st_dtype;

typedef struct dkv_st_tensor {
    const char  *name;          /* owned by the file handle */
    dkv_st_dtype dtype;
    char         dtype_name[12];/* as written in the file: "BF16", "F32", "I64", ... */
    uint32_t     elem_bytes;
    uint32_t     ndim;
    uint64_t     shape[DKV_ST_MAX_DIMS];
    uint64_t     numel;
    uint64_t     begin, end;    /* byte offsets relative to the data section */
} dkv_st_tensor;

typedef struct dkv_st dkv_st;   /* an open file (mapped); opaque */

/* Opens and validates path.  Caller closes with dkv_st_close (NULL is a no-op). */
dkv_status dkv_st_open(const char *path, dkv_st **out, dkv_err *err);
void       dkv_st_close(dkv_st *st);

uint32_t             dkv_st_count(const dkv_st *st);
const dkv_st_tensor *dkv_st_at(const dkv_st *st, uint32_t i);          /* in file order */
const dkv_st_tensor *dkv_st_find(const dkv_st *st, const char *name);  /* NULL when absent */
/* The __metadata__ value of key, or NULL.  Borrowed from the handle. */
const char          *dkv_st_metadata(const dkv_st *st, const char *key);
/* The tensor's raw little-endian bytes (end - begin of them), borrowed from the mapping. */
const void          *dkv_st_data(const dkv_st *st, const dkv_st_tensor *t);

/* Converts t to float32 into out, which holds n floats; n must equal t->numel (the message
 * names the tensor, its shape and n otherwise).  F32, F16 and BF16 only (DKV_EUNSUPPORTED). */
dkv_status dkv_st_read_f32(const dkv_st *st, const dkv_st_tensor *t, float *out, uint64_t n, dkv_err *err);

/* Number conversions used by the reader and writer (round to nearest even; NaN stays NaN). */
float    dkv_bf16_to_f32(uint16_t h);
uint16_t dkv_f32_to_bf16(float f);
float    dkv_f16_to_f32(uint16_t h);
uint16_t dkv_f32_to_f16(float f);

/* ------------------------------------------------------------------ writer (tests, tools) */

typedef struct dkv_st_writer dkv_st_writer;

dkv_status dkv_st_writer_new(dkv_st_writer **out, dkv_err *err);
void       dkv_st_writer_free(dkv_st_writer *w);
/* Adds a tensor of n float32 values stored as dtype (F32, F16 or BF16); copies the data. */
dkv_status dkv_st_writer_add_f32(dkv_st_writer *w, const char *name, dkv_st_dtype dtype, uint32_t ndim,
                                 const uint64_t *shape, const float *data, dkv_err *err);
/* Adds a tensor from raw bytes with any dtype name ("I64", ...); copies nbytes of data. */
dkv_status dkv_st_writer_add_raw(dkv_st_writer *w, const char *name, const char *dtype_name, uint32_t ndim,
                                 const uint64_t *shape, const void *data, size_t nbytes, dkv_err *err);
/* Adds a __metadata__ entry. */
dkv_status dkv_st_writer_meta(dkv_st_writer *w, const char *key, const char *value, dkv_err *err);
/* Writes the file (header padded to 8 bytes, tensors in the order added). */
dkv_status dkv_st_writer_write(const dkv_st_writer *w, const char *path, dkv_err *err);

/* ------------------------------------------------------------------ model naming */

typedef enum dkv_st_naming {
    DKV_ST_NAMING_LLADA = 0,
    DKV_ST_NAMING_DREAM
} dkv_st_naming;

/* The file name of a canonical ref tensor name (see dkv_ref_weights_foreach), e.g.
 * ("layers.3.wq", LLaDA) -> "model.transformer.blocks.3.q_proj.weight".  DKV_ENOENT for an
 * unknown canonical name. */
dkv_status dkv_st_name(dkv_st_naming naming, const char *canonical, char *out, size_t out_len, dkv_err *err);

/* LLaDA when model.transformer.wte.weight is in any file, Dream when model.embed_tokens.weight
 * is; DKV_ENOENT otherwise. */
dkv_status dkv_st_detect_naming(dkv_st *const *files, uint32_t n_files, dkv_st_naming *out, dkv_err *err);

/* Fills w (already sized for the model) from the files (a checkpoint's shards, in any order):
 * every tensor w needs must be present exactly once with the exact shape; each is converted to
 * float32.  Tensors in the files that w does not use are ignored and counted in *n_unused
 * (may be NULL). */
dkv_status dkv_st_load_ref(dkv_st *const *files, uint32_t n_files, dkv_st_naming naming, dkv_ref_weights *w,
                           uint32_t *n_unused, dkv_err *err);

/* Opens the shards, detects the naming, and returns the model's weights as a new
 * dkv_ref_weights (free with dkv_ref_weights_free): what a backend is handed through
 * dkv_backend_setup.weights.  Errors name the file and the tensor. */
dkv_status dkv_st_load_weights(const char *const *paths, uint32_t n_paths, const dkv_model *m, float rms_eps,
                               dkv_ref_weights **out, dkv_err *err);

/* Writes every tensor of w to path under the given naming, stored as dtype. */
dkv_status dkv_st_save_ref(const dkv_ref_weights *w, dkv_st_naming naming, dkv_st_dtype dtype,
                           const char *path, dkv_err *err);

#endif
