/* fused_mma.cuh - the PTX the tensor-core kernels share (flash attention, skinny GEMM): cp.async
 * into shared memory, ldmatrix, bf16 mma.sync m16n8k16 with fp32 accumulation, streaming loads.
 *
 * Fragment layout of mma.m16n8k16 (lane = 4 g + c, g = lane / 4, c = lane % 4):
 *   A (16 x 16, row-major)  a0 = A[g][2c..2c+1]  a1 = A[g+8][2c..]  a2 = A[g][2c+8..]  a3 = A[g+8][2c+8..]
 *   B (16 x 8, "col")       b0 = B[2c..2c+1][g]  b1 = B[2c+8..2c+9][g]
 *   C (16 x 8, fp32)        c0, c1 = C[g][2c..2c+1]   c2, c3 = C[g+8][2c..2c+1]
 * Each 32-bit register holds two bf16, the lower column (or row, for B) in the low half. */
#ifndef DKV_CUDA_FUSED_MMA_CUH
#define DKV_CUDA_FUSED_MMA_CUH

#include <stdint.h>

#include <cuda_bf16.h>

/* 16 bytes global -> shared, bypassing L1; src_bytes 0 writes 16 zero bytes and reads nothing. */
static __device__ __forceinline__ void cp_async16(void *smem, const void *gmem, int src_bytes)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes) : "memory");
}

static __device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

/* Waits until at most N of this thread's committed groups are still in flight. */
template <int N>
static __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* Four 8x8 bf16 matrices from shared memory; lane l gives the row address of matrix l / 8. */
static __device__ __forceinline__ void ldsm_x4(uint32_t r[4], const void *p)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}

/* The same, each matrix transposed. */
static __device__ __forceinline__ void ldsm_x4_t(uint32_t r[4], const void *p)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}

/* c += a b (m16n8k16, bf16 in, fp32 accumulate).  Registers only: not volatile, so the
 * compiler may schedule shared-memory loads around it. */
static __device__ __forceinline__ void mma_bf16(float c[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                                uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* Two floats to a bf16 pair (lo in the low half), round to nearest even. */
static __device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

/* 16 bytes from global memory read once (weights): not kept in L1. */
static __device__ __forceinline__ uint4 ld_stream16(const void *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

static __device__ __forceinline__ uint4 lds16(const void *p)
{
    return *reinterpret_cast<const uint4 *>(p);
}

#endif
