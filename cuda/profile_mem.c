/* profile_mem.c - `dkv profile`'s memory section (docs/PROFILE_FORMAT.md "memory"): the device
 * memory a CUDA backend process holds besides what dkv allocates itself, read with
 * cudaMemGetInfo at the start of the profile, before any other allocation:
 *
 *   context_bytes      total - free right after cudaFree(0) creates the context.  Free memory
 *                      before the context is not measurable from inside the process, so this is
 *                      the context only on an otherwise idle GPU (the profile says so; another
 *                      process's memory would be counted in it);
 *   libraries_bytes    what dkv_cuda_ctx_new adds (cuBLASLt and cuBLAS handles) minus its
 *                      cuBLASLt workspace, which dkv allocates itself and counts
 *                      (DKV_DEVMEM_CUBLASLT_WS_BYTES, core/model/devmem.h);
 *   blas_handle_bytes  one more cuBLAS handle (cublasCreate) and its first GEMM (cuBLAS takes its
 *                      default workspace at first use): the CUDA backend creates one for the
 *                      sparse selection's scores, and the low-rank compressor one more;
 *   first_launch_bytes lazy module loading: what the first launch of dkv's fill kernel and the
 *                      first cuBLASLt GEMM add, their buffers freed.  Modules of kernels first
 *                      launched later are not in it.
 *
 * The measurement is in setup (pr_mem_setup); the section itself (pr_sec_memory) repeats the
 * handle measurement once more at its place in the run (a check that the figure repeats). */
#include <cublas_v2.h>

#include "cuda/profile_internal.h"
#include "model/devmem.h"

static dkv_status used(double *u, double *tot_out, dkv_err *err)
{
    size_t fr = 0, tot = 0;
    PR_CU(cudaMemGetInfo(&fr, &tot));
    *u = (double)(tot - fr);
    if (tot_out)
        *tot_out = (double)tot;
    return DKV_OK;
}

/* One cuBLAS handle and one small GEMM through it; *bytes = what the two added (the handle is
 * destroyed afterwards, so the memory it held is given back).  The GEMM is bf16 with fp32
 * compute, like the backend's own: an fp32 SGEMM here loaded cuBLAS's SGEMM kernels before the
 * compress section, whose first call (the low-rank compressor's SGEMMs, 89 ms on the H200 in a
 * process that had run none) then measured 1.8 ms, and the simulator charged that. */
static dkv_status handle_bytes(prof_ctx *P, double *bytes, dkv_err *err)
{
    uint16_t *m = NULL;   /* bf16 */
    PR_CU(cudaMalloc((void **)&m, 3 * 64 * 64 * sizeof *m));
    PR_CU(cudaMemsetAsync(m, 0, 3 * 64 * 64 * sizeof *m, P->st));
    PR_CU(cudaStreamSynchronize(P->st));
    double u0, u1;
    PR_TRY(used(&u0, NULL, err));
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS)
        return dkv_err_set(err, DKV_EIO, "dkv profile: memory: cublasCreate failed");
    const float one = 1, zero = 0;
    cublasStatus_t s = cublasSetStream(h, P->st);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, m, CUDA_R_16BF, 64, m + 4096, CUDA_R_16BF, 64,
                         &zero, m + 8192, CUDA_R_16BF, 64, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    cudaError_t e = cudaStreamSynchronize(P->st);
    dkv_status st = used(&u1, NULL, err);
    cublasDestroy(h);
    cudaFree(m);
    if (s != CUBLAS_STATUS_SUCCESS || e != cudaSuccess)
        return dkv_err_set(err, DKV_EIO, "dkv profile: memory: the cuBLAS handle's first GEMM failed");
    *bytes = u1 - u0;
    return st;
}

dkv_status pr_mem_context(prof_ctx *P, dkv_err *err)
{
    dkv_prof *p = P->p;
    PR_CU(cudaFree(0));
    PR_TRY(used(&p->mem_context_bytes, &p->mem_total_bytes, err));
    return DKV_OK;
}

dkv_status pr_mem_setup(prof_ctx *P, dkv_err *err)
{
    dkv_prof *p = P->p;
    double u;
    PR_TRY(used(&u, NULL, err));
    p->mem_libraries_bytes = u - p->mem_context_bytes - (double)DKV_DEVMEM_CUBLASLT_WS_BYTES;
    PR_TRY(handle_bytes(P, &p->mem_blas_handle_bytes, err));
    /* lazy loading: the first fill kernel and the first cuBLASLt GEMM, buffers freed */
    dkv_bf16 *b = NULL;
    PR_CU(cudaMalloc((void **)&b, 3 * 256 * 256 * sizeof *b));
    PR_CU(cudaStreamSynchronize(P->st));
    double u0, u1;
    PR_TRY(used(&u0, NULL, err));
    PR_TRY(dkv_cuda_fill_random(b, 3 * 256 * 256, 1, 0.5f, 0.0f, P->st, err));
    PR_TRY(dkv_cuda_gemm(P->ctx, b + 2 * 65536, b, b + 65536, NULL, 256, 256, 256, 0.0f, err));
    PR_CU(cudaStreamSynchronize(P->st));
    PR_TRY(used(&u1, NULL, err));
    cudaFree(b);
    p->mem_first_launch_bytes = u1 - u0;
    p->mem_measured = true;
    pr_say(P, "profile: memory: context %.1f MiB, libraries %.1f MiB, cuBLAS handle %.1f MiB, first launches %.1f MiB "
           "(of %.1f GiB)", p->mem_context_bytes / 1048576.0, p->mem_libraries_bytes / 1048576.0,
           p->mem_blas_handle_bytes / 1048576.0, p->mem_first_launch_bytes / 1048576.0, p->mem_total_bytes / 1073741824.0);
    return DKV_OK;
}

dkv_status pr_sec_memory(prof_ctx *P, dkv_err *err)
{
    if (P->dry) {
        P->est[P->sec] += 0.2;
        return DKV_OK;
    }
    double b;
    PR_TRY(handle_bytes(P, &b, err));
    P->p->mem_blas_handle_again_bytes = b;
    pr_say(P, "profile: memory: a cuBLAS handle again: %.1f MiB", b / 1048576.0);
    return DKV_OK;
}
