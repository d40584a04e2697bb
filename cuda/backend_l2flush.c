/* backend_l2flush.c - the CUDA backend's L2 flush diagnostic (docs/GPU.md "The L2 flush diagnostic"): a buffer of
 * twice the L2 read after the listed points of a layer (its DRAM writes under Nsight Compute: the dirty bytes the L2
 * held there), or, since session 48, the step's rows of an activation buffer (its DRAM reads: what of it the L2 no
 * longer held). */
#include "cuda/backend_internal.h"

/* The l2_flush diagnostic's buffer (dkv_cuda_l2_flush_bytes), random bf16 (its reads leave clean lines). */
dkv_status bk_l2_flush_init(dkv_cuda_backend *b, dkv_err *err)
{
    for (uint32_t i = 0; i < b->o.n_l2_flush; i++)
        if (b->l2f[i].layer >= b->m.n_layers)
            return dkv_err_set(err, DKV_EINVAL, "cuda backend: options.l2_flush[%u].layer %u: model '%s' has %u layers "
                               "(0 to %u)", i, b->l2f[i].layer, b->m.name, b->m.n_layers, b->m.n_layers - 1);
    int dev = 0, l2 = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) != cudaSuccess)
        return dkv_err_set(err, DKV_EIO, "cuda backend: l2_flush: the device's L2 size is not readable");
    b->flush_bytes = dkv_cuda_l2_flush_bytes((size_t)l2);
    if (cudaMalloc(&b->flush, b->flush_bytes + DKV_CUDA_L2_FLUSH_SINK) != cudaSuccess) {
        b->flush = NULL;
        return dkv_err_set(err, DKV_ENOMEM, "cuda backend: l2_flush: no device memory for its %zu-byte buffer",
                           b->flush_bytes);
    }
    DKV_TRY(dkv_cuda_fill_random((dkv_bf16 *)b->flush, b->flush_bytes / 2, 7, 0.5f, 0.0f, b->st, err));
    return cudaStreamSynchronize(b->st) == cudaSuccess ? DKV_OK
                                                       : dkv_err_set(err, DKV_EIO, "cuda backend: l2_flush: fill failed");
}

dkv_status bk_l2_flush(dkv_cuda_backend *b, uint32_t l, dkv_cuda_l2_point p, uint32_t T, dkv_err *err)
{
    const dkv_model *m = &b->m;
    const size_t C = m->hidden, F = m->ffn, QD = (size_t)m->n_heads * m->head_dim;
    const size_t QKV = QD + 2 * (size_t)m->n_kv_heads * m->head_dim, row = sizeof(dkv_bf16);
    for (uint32_t i = 0; i < b->o.n_l2_flush; i++) {   /* every entry at this point, in the order listed */
        const dkv_cuda_l2_flush_at *f = &b->l2f[i];
        if (f->layer != l || f->after != p)
            continue;
        const void *buf = b->flush;
        size_t bytes = b->flush_bytes;
        switch (f->read) {   /* the step's T rows of an activation buffer (their bytes a multiple of 16) */
        case DKV_CUDA_L2B_X: buf = b->x, bytes = T * C * row; break;
        case DKV_CUDA_L2B_H: buf = b->h, bytes = T * C * row; break;
        case DKV_CUDA_L2B_QKV: buf = b->qkv, bytes = T * QKV * row; break;
        case DKV_CUDA_L2B_ATT: buf = b->att, bytes = T * QD * row; break;
        case DKV_CUDA_L2B_GU: buf = b->gu, bytes = T * 2 * F * row; break;
        case DKV_CUDA_L2B_FF: buf = b->ff, bytes = T * F * row; break;
        default: break;
        }
        bytes -= bytes % 16;
        if (bytes)
            DKV_TRY(dkv_cuda_l2_flush(b->st, buf, bytes, (char *)b->flush + b->flush_bytes, err));
    }
    return DKV_OK;
}
