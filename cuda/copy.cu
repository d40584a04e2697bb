/* copy.cu - the host tier (pinned memory) and raw KV offload / fetch on the copy stream. */
#include "cuda/common.cuh"

extern "C" dkv_status dkv_cuda_host_alloc(void **p, size_t bytes, dkv_err *err)
{
    DKV_ARG(p != NULL, "dkv_cuda_host_alloc");
    *p = NULL;
    DKV_CU(cudaHostAlloc(p, bytes ? bytes : 1, cudaHostAllocDefault));
    return DKV_OK;
}

extern "C" void dkv_cuda_host_free(void *p)
{
    if (p)
        cudaFreeHost(p);
}

static dkv_status pinned(const void *host, const char *fn, dkv_err *err)
{
    cudaPointerAttributes a;
    DKV_CU(cudaPointerGetAttributes(&a, host));
    if (a.type != cudaMemoryTypeHost)
        return dkv_err_set(err, DKV_EINVAL, "%s: the host buffer is not pinned (use dkv_cuda_host_alloc): a "
                           "pageable copy would serialise with compute", fn);
    return DKV_OK;
}

/* The launcher of both directions: wait, copy, record, on the copy stream. */
static dkv_status launch_copy(dkv_cuda_ctx *ctx, void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                              cudaEvent_t after, cudaEvent_t done, dkv_err *err)
{
    cudaStream_t cs = dkv_cuda_ctx_copy_stream(ctx);
    if (after)
        DKV_CU(cudaStreamWaitEvent(cs, after, 0));
    DKV_CU(cudaMemcpyAsync(dst, src, bytes, kind, cs));
    if (done)
        DKV_CU(cudaEventRecord(done, cs));
    return DKV_OK;
}

extern "C" dkv_status dkv_cuda_offload(dkv_cuda_ctx *ctx, void *host_dst, const void *dev_src, size_t bytes,
                                       cudaEvent_t after, cudaEvent_t done, dkv_err *err)
{
    DKV_ARG(ctx && host_dst && dev_src, "dkv_cuda_offload");
    dkv_status st = pinned(host_dst, "dkv_cuda_offload", err);
    return st != DKV_OK ? st : launch_copy(ctx, host_dst, dev_src, bytes, cudaMemcpyDeviceToHost, after, done, err);
}

extern "C" dkv_status dkv_cuda_fetch(dkv_cuda_ctx *ctx, void *dev_dst, const void *host_src, size_t bytes,
                                     cudaEvent_t after, cudaEvent_t done, dkv_err *err)
{
    DKV_ARG(ctx && dev_dst && host_src, "dkv_cuda_fetch");
    dkv_status st = pinned(host_src, "dkv_cuda_fetch", err);
    return st != DKV_OK ? st : launch_copy(ctx, dev_dst, host_src, bytes, cudaMemcpyHostToDevice, after, done, err);
}
