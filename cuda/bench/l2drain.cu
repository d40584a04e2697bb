// l2drain.cu - when the GPU's L2 writes dirty lines back to HBM, for core/cost's L2 replay (cost_l2.c,
// docs/COST_MODEL.md "When the L2 writes back").  Nsight Compute's per-kernel rows of the forward show short
// kernels writing back almost nothing while longer ones drain what earlier kernels left dirty; this tells time
// from traffic.  Meant to run under Nsight Compute with caches left alone between kernels, one row per kernel:
//   nvcc -O3 -arch=sm_90 cuda/bench/l2drain.cu -o l2drain
//   ncu --csv --cache-control none --clock-control none \
//       --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
//       --log-file l2drain.csv ./l2drain > l2drain.txt
//   /usr/bin/python3 scripts/l2drain.py l2drain.txt l2drain.csv
// stdout is the manifest: one line per launch, in launch order ("k <n> <role> <trial> <kind> <D MB> <x>"),
// which scripts/l2drain.py pairs with Nsight Compute's rows.
//
// Every trial starts from an L2 flushed by reading a 256 MiB buffer (role flush), writes D MB of a probe
// buffer dirty (role w: a short kernel), runs the middle kernel (role m), then flushes again (role h: its DRAM
// writes are the probe's lines still dirty).  Middle kernels, by kind:
//   spin     every SM spins x microseconds on the global timer, no memory traffic: a drain in time shows as
//            the spin's DRAM writes growing with x;
//   spin1    one CTA spins x microseconds (the GPU nearly idle);
//   read     reads x MB of another buffer (well under the L2): a drain by traffic grows with x;
//   none     no middle kernel (x 0): the host idles x milliseconds between w and h instead.
// Then (kind slow) the probe is written by a kernel that writes its D MB over x microseconds (each CTA writes its
// share, then spins): how much of a kernel's own writes it writes back, by its length.
// Since session 31, strided kinds (the KV pool's addressing: a token's row of one layer, 1 KB on Dream-7B, lies a
// whole slot apart from the next token's, 56 KB on Dream-7B and 512 KB on LLaDA-8B in the t-major pool), named with
// their stride S in KB:
//   sread<S>  the middle kernel reads x MB as 1 KB chunks S KB apart (sread1: contiguous, the control), after the
//             contiguous dirty probe: does a strided read of far less than the L2 push dirty lines out (set
//             conflicts), where a contiguous one does not?
//   swrite<S> the probe itself is written as D MB of 1 KB chunks S KB apart (role w), then flushed: how much of it
//             the writer already wrote back (x 0).
// And behind<L>: the probe is written behind a step's end as the LM head leaves it: L MB written dirty (role b: the
// fp32 logits, 39 MB at 64 rows on Dream-7B), read back (role r: the argmax), then the D MB probe (w) and a read of
// x MB (m); behind0 writes no logits (the control).  Is the L2 then at its dirty bound, so that a small writer
// writes back about what it writes?
// Since session 32, `l2drain share` runs only kinds that ask whether an SM's access to lines another SM left dirty
// writes them back (the forward's kernels read and rewrite each other's outputs with other CTAs on other SMs: the
// attention reads by head what the RoPE wrote by row, a GEMM's every column of CTAs reads its input), the probe (D
// MB, role w) then:
//   xread<B>   read by the same grid with each CTA reading what CTA b + B wrote (xread0: its own lines, the control)
//              (role m), then re-read as written (role q: its DRAM reads are the probe's lines no longer in L2);
//   xreadall   read whole by every CTA (lines read from SMs on both halves of the L2), then q;
//   xwrite<B>  rewritten by each CTA over what CTA b + B wrote (xwrite0: its own), then q.
// The flush (h) finds what is still dirty.  An L2 that cleans a dirty line when another SM reads (or rewrites) it
// shows it as m's DRAM writes growing from xread0 to xreadall with the flush's falling, q reading nothing back.
// Since session 36, `l2drain order` runs only kinds that ask which lines the L2 gives up first when a stream of x MB
// read once comes (role m, a contiguous read of lines not in L2), the probe's two halves of D / 2 MB each (A, then
// B or C) set up so that an LRU and the alternatives disagree:
//   rehit    A written dirty (w), read again (a: hits), then B written dirty (v): A is older but re-referenced;
//   rehit0   the same without the re-read (the control: A older, not re-referenced);
//   dclean   A written dirty (w), then C read clean (c: another buffer's D / 2 MB, newer than A);
//   chit     A read clean (w: a read), read again (a: hits), then B written dirty (v) (since session 37: an L2 keeping
//            re-referenced lines keeps A here as under rehit, one keeping dirty lines gives A up first; device call
//            118: A first, docs/COST_MODEL.md "Session 37").
// Then A and the other half re-read (qa, then qb or qc; kinds ending in r re-read the other half first): their DRAM
// reads are the bytes of each half the stream pushed out; h finds what is still dirty.  An LRU gives up A first in
// all four; an L2 that keeps re-referenced lines (RRIP-like) gives up B first under rehit and chit; one that keeps
// dirty lines gives up C first under dclean and A under chit.
// Since session 39, `l2drain gemm` asks the same of a stream that is a cuBLAS GEMM's weights (cublasGemmEx, bf16,
// y[M x N] = x[M x K] W^T, K = 3,584, W of x MB taken from a buffer not in L2; the forward's GEMMs are cuBLAS's):
// kinds gemm<M> (M rows: 64 and 288 in call 121; since session 40 also 128, 192, 384 and 576) against plain (role m
// the read of x MB, as rehit0): half A written dirty (w), half B written dirty (v), the stream (m: one launch of l2drain's, or the GEMM's kernels, one or more, which
// scripts/l2drain_gemm.py pairs by name), then A and B re-read (qa, qb) and the flush (h).  Role g0: a GEMM of each
// M before the trials (cuBLAS's first use), each followed by a flush.  Built with -lcublas.
// Since session 40, `l2drain rmw` asks it of lines read and written in place (rmw_kernel: as cuda/rope.cu turns q and
// k, the rows the sparse selection then reads; docs/COST_MODEL.md "The soft edge", the twenty-fifth trial), the same
// roles as gemm's: kinds plain (A and B written, the stream read: gemm's plain), rmwstream (the stream read and
// written in place), rmwprobe (A and B read and written in place, the stream read), rmwboth, and wwprobe (A and B
// each written twice: a write that hits, against rmwprobe's read that misses, then a write that hits; `order`'s rehit
// is a read that hits).  An L2 that keeps such lines past its capacity shows A and B gone later under rmwprobe and
// rmwboth (or wwprobe) than under plain.  Since session 41 `rmw` also asks how much the L2 keeps dirty behind one
// writer of D MB = 8-64 (role w, a part of big_ no recent trial touched, then the flush h, whose DRAM writes are
// what is still dirty; w's own are what it wrote back), by the kind of write: bwrite (plain writes, as the attention
// writes its output), brmw (read and written in place from HBM, as the RoPE turns q), bre (written plainly first,
// role p, then read and written in place: lines already dirty made dirty again, as the RoPE turns the q|k|v GEMM's
// output).  Call 102 measured the first kind's bound once (29.7 MB behind a 39 MB writer); the replay keeps one
// bound for every write (DKV_COST_L2_DIRTY_FRAC, 21.0 MB), which fits the KV store's write-backs and not the
// attention's after it (docs/COST_MODEL.md "The soft edge", session 41).
// Since session 44 `l2drain order D` and `l2drain rmw D` take the probe's MB (an even number from 2 to 32; 8 when
// left out, as before): another D runs its own x grid (order 8-40 MB, rmw 8-56 MB) and no bound kinds, for the
// line-level L2 model's check at sizes it was not built on (docs/COST_MODEL.md "A line-level L2", device call 129).
// Since session 47 `l2drain pool` asks whether the attention's read of its cached keys (pool_kernel, the KV pool's
// layout read by CTA as cuda/attention.cu's batched Reuse launch reads it) pushes the dirty probe out as a plain read
// of the same bytes does (run_pool); and `l2drain stride` how a strided read's edge depends on its stride (run_stride).

#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); exit(1);} } while (0)

static const int BLOCK = 256;
static const size_t MB = 1000000;

__device__ unsigned long long now_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void read_kernel(const uint4 *__restrict__ p, size_t n_vec, unsigned *out)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned acc = 0;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n_vec; e += stride) {
        uint4 v = p[e];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u)
        out[0] = acc;
}

// Writes n_vec 16-byte vectors; with spin_ns > 0 each CTA writes its share, then spins until spin_ns after its
// start (the writes early in a kernel spin_ns long).
__global__ void write_kernel(uint4 *__restrict__ p, size_t n_vec, unsigned seed, unsigned long long spin_ns)
{
    unsigned long long t0 = now_ns();
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n_vec; e += stride)
        p[e] = make_uint4((unsigned)e ^ seed, seed, (unsigned)(e >> 32), ~seed);
    while (spin_ns && now_ns() - t0 < spin_ns)
        ;
}

// Reads (or writes) n_chunks chunks of chunk_vec 16-byte vectors, chunk c at c * stride_vec vectors.
__global__ void sread_kernel(const uint4 *__restrict__ p, size_t n_chunks, size_t chunk_vec, size_t stride_vec,
                             unsigned *out)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned acc = 0;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n_chunks * chunk_vec; e += stride) {
        uint4 v = p[(e / chunk_vec) * stride_vec + e % chunk_vec];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u)
        out[0] = acc;
}

__global__ void swrite_kernel(uint4 *__restrict__ p, size_t n_chunks, size_t chunk_vec, size_t stride_vec,
                              unsigned seed)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n_chunks * chunk_vec; e += stride)
        p[(e / chunk_vec) * stride_vec + e % chunk_vec] = make_uint4((unsigned)e ^ seed, seed, (unsigned)(e >> 32), ~seed);
}

// The probe's n_vec vectors read (or with write, rewritten) by the grid, each CTA taking the lines CTA b + shift (mod
// the grid) took in write_kernel's grid-stride loop; with all, every CTA reads every vector.
__global__ void xread_kernel(uint4 *__restrict__ p, size_t n_vec, unsigned shift, int all, int write, unsigned *out)
{
    size_t stride = (size_t)gridDim.x * blockDim.x, off = (size_t)shift * blockDim.x;
    unsigned acc = 0;
    if (all) {
        for (size_t e = threadIdx.x; e < n_vec; e += blockDim.x) {
            uint4 v = p[e];
            acc ^= v.x ^ v.y ^ v.z ^ v.w;
        }
    } else {
        for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n_vec; e += stride) {
            size_t i = (e / stride) * stride + (e % stride + off) % stride;   // the same pass, CTA b + shift's lane
            if (i >= n_vec)
                continue;
            if (write) {
                p[i] = make_uint4((unsigned)i, shift, 7u, ~(unsigned)i);
            } else {
                uint4 v = p[i];
                acc ^= v.x ^ v.y ^ v.z ^ v.w;
            }
        }
    }
    if (acc == 0x9e3779b9u)
        out[0] = acc;
}

// Reads each of n_vec 16-byte vectors and writes it back changed, in place (a read-modify-write, as cuda/rope.cu does
// to q and k): its lines are read from HBM (or hit), then dirty.
__global__ void rmw_kernel(uint4 *__restrict__ p, size_t n_vec, unsigned seed)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n_vec; e += stride) {
        uint4 v = p[e];
        p[e] = make_uint4(v.x ^ seed, v.y + 1, v.z, ~v.w);
    }
}

// Since session 47: T tokens' K and V rows of one layer of a KV pool laid out as cuda/'s (a token's slot of slot_vec
// 16-byte vectors holds every layer; the layer's K | V at lo_vec, each head's row 256 bytes: 16 vectors), read as the
// attention's batched Reuse launch reads its cached keys (by_cta: CTA (item, head) of items x heads reads that head's K
// and V rows of the item's T / items tokens, nothing else) or grid-stride over the same bytes (each token's 2 heads x
// 256 bytes of K | V in turn, every CTA a share: a strided plain read).
__global__ void pool_kernel(const uint4 *__restrict__ p, size_t T, int items, int heads, size_t slot_vec, size_t lo_vec,
                            int by_cta, unsigned *out)
{
    const size_t tok_vec = (size_t)2 * heads * 16;   // a token's K | V of the layer
    unsigned acc = 0;
    if (by_cta) {
        const size_t i = blockIdx.x / heads, h = blockIdx.x % heads, t0 = i * T / items, t1 = (i + 1) * T / items;
        const size_t per = blockDim.x / 32;            // tokens a pass: 32 threads a token (16 K vectors, 16 V)
        for (size_t t = t0 + threadIdx.x / 32; t < t1; t += per) {
            const unsigned l = threadIdx.x % 32;
            uint4 v = p[t * slot_vec + lo_vec + (l < 16 ? h : heads + h) * 16 + l % 16];
            acc ^= v.x ^ v.y ^ v.z ^ v.w;
        }
    } else {
        const size_t stride = (size_t)gridDim.x * blockDim.x;
        for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < T * tok_vec; e += stride) {
            uint4 v = p[(e / tok_vec) * slot_vec + lo_vec + e % tok_vec];
            acc ^= v.x ^ v.y ^ v.z ^ v.w;
        }
    }
    if (acc == 0x9e3779b9u)
        out[0] = acc;
}

__global__ void spin_kernel(unsigned long long ns, unsigned *out)
{
    unsigned long long t0 = now_ns(), n = 0;
    while (now_ns() - t0 < ns)
        n++;
    if (n == 0xffffffffffffull)
        out[1] = (unsigned)n;
}

static int n_launch = 0, grid_;
static uint4 *probe_, *other_, *flush_, *big_;
static const size_t KB = 1024, BIG = 4097ull << 20;   // 8 MB of 1 KB chunks 512 KB apart, and a chunk
static unsigned *out_;

static void manifest(const char *role, int trial, const char *kind, double d, double x)
{
    printf("k %d %s %d %s %.3f %.3f\n", n_launch++, role, trial, kind, d, x);
}

static void flush(int trial, const char *kind, double d, double x, const char *role)
{
    manifest(role, trial, kind, d, x);
    read_kernel<<<grid_, BLOCK>>>(flush_, (256ull << 20) / 16, out_);
    CK(cudaGetLastError());
}

static void write_probe(int trial, const char *kind, double d, double x, unsigned long long spin_ns)
{
    manifest("w", trial, kind, d, x);
    write_kernel<<<grid_, BLOCK>>>(probe_, (size_t)(d * MB) / 16, (unsigned)trial * 2654435761u, spin_ns);
    CK(cudaGetLastError());
}

// `l2drain share`: the xread / xwrite kinds alone (the file's head).
static int run_share(int trial)
{
    const double ds[] = {1, 4, 8};
    const int shifts[] = {0, 1, 66, -1};   // -1: xreadall
    char kind[32];
    for (int rep = 0; rep < 2; rep++)
        for (int wr = 0; wr < 2; wr++)
            for (int sh : shifts) {
                if (wr && (sh == 1 || sh < 0))   // rewrites: the control and the far shift only
                    continue;
                if (sh < 0)
                    snprintf(kind, sizeof kind, "xreadall");
                else
                    snprintf(kind, sizeof kind, "x%s%d", wr ? "write" : "read", sh);
                for (double d : ds) {
                    size_t n = (size_t)(d * MB) / 16;
                    flush(trial, kind, d, rep, "flush");
                    write_probe(trial, kind, d, rep, 0);
                    manifest("m", trial, kind, d, rep);
                    xread_kernel<<<grid_, BLOCK>>>(probe_, n, sh < 0 ? 0u : (unsigned)sh, sh < 0, wr, out_);
                    CK(cudaGetLastError());
                    manifest("q", trial, kind, d, rep);
                    read_kernel<<<grid_, BLOCK>>>(probe_, n, out_);
                    CK(cudaGetLastError());
                    flush(trial, kind, d, rep, "h");
                    trial++;
                }
            }
    return trial;
}

static void read_buf(const char *role, int trial, const char *kind, double d, double x, const uint4 *p, double mb)
{
    manifest(role, trial, kind, d, x);
    read_kernel<<<grid_, BLOCK>>>(p, (size_t)(mb * MB) / 16, out_);
    CK(cudaGetLastError());
}

// The stream of trial's x MB: a part of big_ no recent trial read (64 MB further each trial).
static uint4 *stream_buf(int trial, double x)
{
    return big_ + (size_t)trial * (64 * MB / 16) % (BIG / 16 - (size_t)(x * MB) / 16);
}

// One trial of the gemm and rmw kinds: the flush, the probe's halves set up (setup(): roles w and v), the stream of x
// MB (stream(W): role m), each half re-read (qa, qb) and the flush that finds what is still dirty (h).
template <class Setup, class Stream>
static void halves_trial(int trial, const char *kind, double d, double x, Setup setup, Stream stream)
{
    uint4 *W = stream_buf(trial, x);
    size_t half = (size_t)(d / 2 * MB) / 16;
    flush(trial, kind, d, x, "flush");
    setup();
    stream(W);
    read_buf("qa", trial, kind, d, x, probe_, d / 2);
    read_buf("qb", trial, kind, d, x, probe_ + half, d / 2);
    flush(trial, kind, d, x, "h");
}

// The probe's half b written dirty by write_kernel: A (b 0, role w) or B (b 1, role v, newer than A); half: uint4s a half
static void write_half(int b, int trial, const char *kind, double d, double x, size_t half)
{
    manifest(b ? "v" : "w", trial, kind, d, x);
    write_kernel<<<grid_, BLOCK>>>(probe_ + b * half, half, (unsigned)trial * (b ? 40503u : 2654435761u), 0);
    CK(cudaGetLastError());
}

// `l2drain order`: the rehit / rehit0 / dclean / chit kinds alone (the file's head).
// D: the probe's MB (8; since session 44 `l2drain order D` takes another, with its own x grid, for the line
// model's held-out check: docs/COST_MODEL.md "A line-level L2")
static const double XS_ORDER8[] = {20, 24, 28, 32, 36, 40, 44}, XS_ORDER[] = {8, 12, 16, 20, 24, 28, 32, 36, 40};
static const double XS_RMW8[] = {16, 24, 32, 40, 48, 64}, XS_RMW[] = {8, 16, 24, 32, 40, 48, 56};

static int run_order(int trial, double d)
{
    const double *xs = d == 8 ? XS_ORDER8 : XS_ORDER;
    const int nx = d == 8 ? 7 : 9;
    const char *kinds[] = {"rehit", "rehit0", "dclean", "chit", "rehitr", "rehit0r", "dcleanr", "chitr"};
    size_t half = (size_t)(d / 2 * MB) / 16;
    for (const char *kind : kinds)
        for (int xi = 0; xi < nx; xi++) {
            const double x = xs[xi];
            bool clean = kind[0] == 'd', chit = kind[0] == 'c', hit = strncmp(kind, "rehit0", 6) != 0 && !clean;
            bool rev = kind[strlen(kind) - 1] == 'r';
            flush(trial, kind, d, x, "flush");
            if (chit) {   // A: the probe's first half, read clean
                read_buf("w", trial, kind, d, x, probe_, d / 2);
            } else {      // A: the probe's first half, dirty
                write_half(0, trial, kind, d, x, half);
            }
            if (hit)
                read_buf("a", trial, kind, d, x, probe_, d / 2);
            if (clean) {
                read_buf("c", trial, kind, d, x, other_, d / 2);   // C: clean, newer than A
            } else {
                write_half(1, trial, kind, d, x, half);   // B: the second half, dirty, newer than A
            }
            read_buf("m", trial, kind, d, x, stream_buf(trial, x), x);
            const char *other = clean ? "qc" : "qb";
            const uint4 *op = clean ? other_ : probe_ + half;
            if (rev)
                read_buf(other, trial, kind, d, x, op, d / 2);
            read_buf("qa", trial, kind, d, x, probe_, d / 2);
            if (!rev)
                read_buf(other, trial, kind, d, x, op, d / 2);
            flush(trial, kind, d, x, "h");
            trial++;
        }
    return trial;
}

// `l2drain gemm`: the plain and gemm<M> kinds (the file's head).
// cuBLAS for the gemm, after and gout modes: a handle, or the process ends with a message
static cublasHandle_t blas_new(void)
{
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "l2drain: cublasCreate failed\n");
        exit(1);
    }
    return h;
}

// Y[M x N] = X[M x K] W^T in bf16, fp32 accumulation (W: N rows of K, as a forward's weights), or the process ends
static void gemm_bf16(cublasHandle_t h, int M, int N, int K, const void *W, const void *X, void *Y)
{
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, W, CUDA_R_16BF, K, X, CUDA_R_16BF, K,
                                     &zero, Y, CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "l2drain: cublasGemmEx M %d N %d K %d: status %d\n", M, N, K, (int)st);
        exit(1);
    }
}

// The probe's halves written dirty: A (w), then B (v), newer than A; half: uint4s a half
static void write_halves(int trial, const char *kind, double d, double x, size_t half)
{
    write_half(0, trial, kind, d, x, half);
    write_half(1, trial, kind, d, x, half);
}

static int run_gemm(int trial)
{
    const double d = 8, xs[] = {16, 24, 32, 40, 48, 64};
    const int K = 3584, Ms[] = {64, 128, 192, 288, 384, 576}, maxM = 576;
    const char *kinds[] = {"plain", "gemm64", "gemm128", "gemm192", "gemm288", "gemm384", "gemm576"};
    size_t half = (size_t)(d / 2 * MB) / 16;
    cublasHandle_t h = blas_new();
    void *X, *Y;   // the GEMM's input (written once, then flushed out with everything else) and output
    CK(cudaMalloc(&X, (size_t)maxM * K * 2));
    CK(cudaMalloc(&Y, (size_t)maxM * (64 * MB / (2 * K) + 64) * 2));
    CK(cudaMemset(X, 0, (size_t)maxM * K * 2));
    auto gemm = [&](int M, double x, const void *W) { gemm_bf16(h, M, (int)(x * MB / (2.0 * K)) / 64 * 64, K, W, X, Y); };
    for (int i = 0; i < (int)(sizeof Ms / sizeof Ms[0]); i++) {   // cuBLAS's first use of each shape, before any
        manifest("g0", trial, kinds[i + 1], d, 16);   // trial; a flush after each, so that a GEMM's kernels end at one of ours
        gemm(Ms[i], 16, big_);
        flush(trial, kinds[i + 1], d, 16, "flush");
    }
    for (const char *kind : kinds)
        for (double x : xs) {
            auto setup = [&] { write_halves(trial, kind, d, x, half); };   // A, then B, dirty
            auto stream = [&](uint4 *W) {
                if (kind[0] == 'p') {
                    read_buf("m", trial, kind, d, x, W, x);
                } else {
                    manifest("m", trial, kind, d, x);
                    gemm(atoi(kind + 4), x, W);   // gemm<M>
                }
            };
            halves_trial(trial, kind, d, x, setup, stream);
            trial++;
        }
    CK(cudaDeviceSynchronize());
    cublasDestroy(h);
    return trial;
}

// `l2drain rmw`: the plain / rmwstream / rmwprobe / rmwboth kinds (the file's head).
static int run_rmw(int trial, double d)
{
    const double *xs = d == 8 ? XS_RMW8 : XS_RMW;
    const int nx = d == 8 ? 6 : 7;
    const char *kinds[] = {"plain", "rmwstream", "rmwprobe", "rmwboth", "wwprobe"};
    size_t half = (size_t)(d / 2 * MB) / 16;
    for (const char *kind : kinds)
        for (int xi = 0; xi < nx; xi++) {
            const double x = xs[xi];
            bool rmw_probe = strcmp(kind, "rmwprobe") == 0 || strcmp(kind, "rmwboth") == 0;
            bool rmw_stream = strcmp(kind, "rmwstream") == 0 || strcmp(kind, "rmwboth") == 0;
            bool twice = strcmp(kind, "wwprobe") == 0;
            auto setup = [&] {
                for (int h = 0; h < 2; h++)   // A (w), then B (v): written (wwprobe: twice), or read and written in place
                    for (int rep = 0; rep <= (int)twice; rep++) {
                        manifest(h ? "v" : "w", trial, kind, d, x);
                        if (rmw_probe)
                            rmw_kernel<<<grid_, BLOCK>>>(probe_ + h * half, half, (unsigned)trial * 2654435761u + h);
                        else
                            write_kernel<<<grid_, BLOCK>>>(probe_ + h * half, half,
                                                           (unsigned)trial * 2654435761u + h + rep, 0);
                        CK(cudaGetLastError());
                    }
            };
            auto stream = [&](uint4 *W) {
                if (rmw_stream) {
                    manifest("m", trial, kind, d, x);
                    rmw_kernel<<<grid_, BLOCK>>>(W, (size_t)(x * MB) / 16, (unsigned)trial * 40503u);
                    CK(cudaGetLastError());
                } else {
                    read_buf("m", trial, kind, d, x, W, x);
                }
            };
            halves_trial(trial, kind, d, x, setup, stream);
            trial++;
        }
    const double bds[] = {8, 16, 24, 32, 40, 48, 64};
    if (d != 8)   // the bound kinds do not depend on the probe's size: run with the default D alone
        return trial;
    for (const char *kind : {"bwrite", "brmw", "bre"})   // the dirty bound behind one writer (the file's head)
        for (double bd : bds) {
            bool plain = strcmp(kind, "bwrite") == 0, rewrite = strcmp(kind, "bre") == 0;
            uint4 *W = stream_buf(trial, bd);
            size_t n = (size_t)(bd * MB) / 16;
            flush(trial, kind, bd, 0, "flush");
            if (rewrite) {   // bre: written plainly first
                manifest("p", trial, kind, bd, 0);
                write_kernel<<<grid_, BLOCK>>>(W, n, (unsigned)trial * 2654435761u, 0);
                CK(cudaGetLastError());
            }
            manifest("w", trial, kind, bd, 0);
            if (plain)
                write_kernel<<<grid_, BLOCK>>>(W, n, (unsigned)trial * 40503u, 0);
            else
                rmw_kernel<<<grid_, BLOCK>>>(W, n, (unsigned)trial * 40503u);
            CK(cudaGetLastError());
            flush(trial, kind, bd, 0, "h");
            trial++;
        }
    return trial;
}

// Since session 44, `l2drain after` asks whether a cuBLAS GEMM's weight lines outlive dirty lines written after them as
// a plain read's do (docs/COST_MODEL.md "A line-level L2": in the forward's Reuse steps the GPU writes back during the
// attention dirty rows written after the q|k|v GEMM, which an LRU keeps over the older weights).  Kinds after_plain
// (a read of X = 96 MB), after_gemm64 and after_gemm288 (a GEMM of 64 or 288 rows, K = 3,584, over 96 MB of weights),
// role g; then the probe's halves A and B (4 MB each) written dirty (w, v); a read of y = 8-48 MB of lines not in L2
// (m); A and B re-read (qa, qb: what m pushed out of each) and the flush (h).  An L2 that gives up weight lines first
// shows A and B gone at the same y after either kind; one that keeps them shows A and B going earlier after a GEMM.
static int run_after(int trial)
{
    const double d = 8, x = 96, ys[] = {8, 16, 24, 32, 40, 48};
    const int K = 3584, Ms[] = {64, 288}, maxM = 288, N = (int)(x * MB / (2.0 * K)) / 64 * 64;
    const char *kinds[] = {"after_plain", "after_gemm64", "after_gemm288"};
    size_t half = (size_t)(d / 2 * MB) / 16;
    cublasHandle_t h = blas_new();
    void *X, *Y;
    CK(cudaMalloc(&X, (size_t)maxM * K * 2));
    CK(cudaMalloc(&Y, (size_t)maxM * N * 2));
    CK(cudaMemset(X, 0, (size_t)maxM * K * 2));
    auto gemm = [&](int M, const void *W) { gemm_bf16(h, M, N, K, W, X, Y); };
    for (int i = 0; i < 2; i++) {   // cuBLAS's first use of each shape, each followed by a flush
        manifest("g0", trial, kinds[i + 1], d, x);
        gemm(Ms[i], big_);
        flush(trial, kinds[i + 1], d, x, "flush");
    }
    for (int k = 0; k < 3; k++)
        for (double y : ys) {
            // the weights and the stream at offsets of big_ apart and new each trial
            size_t off = (size_t)trial * (64 * MB / 16) % (BIG / 16 - (size_t)(256 * MB) / 16);
            uint4 *W = big_ + off, *S = big_ + off + (size_t)(128 * MB) / 16;
            flush(trial, kinds[k], d, y, "flush");
            if (k == 0) {
                read_buf("g", trial, kinds[k], d, y, W, x);
            } else {
                manifest("g", trial, kinds[k], d, y);
                gemm(Ms[k - 1], W);
            }
            write_halves(trial, kinds[k], d, y, half);
            read_buf("m", trial, kinds[k], d, y, S, y);
            read_buf("qa", trial, kinds[k], d, y, probe_, d / 2);
            read_buf("qb", trial, kinds[k], d, y, probe_ + half, d / 2);
            flush(trial, kinds[k], d, y, "h");
            trial++;
        }
    CK(cudaDeviceSynchronize());
    cublasDestroy(h);
    return trial;
}

// Since session 46, `l2drain gout` asks whether the lines a cuBLAS GEMM writes leave the L2 before older dirty lines
// written by a plain kernel (docs/COST_MODEL.md "A line-level L2": in the forward's Reuse steps the GPU writes back
// during the attention most of the q, k and v the q|k|v GEMM wrote, which an LRU keeps until the O projection's
// weights push them out; an output written with an evict-first hint would leave first).  The probe's half A (4 MB)
// written dirty by write_kernel (w), then half B written (v) by write_kernel (kinds gout_plain, gout_plainrmw) or as
// the output of a cuBLAS GEMM, Y[250 x 8,000] = X W^T (kinds gout_gemm, K = 64, 1.0 MB of weights; gout_gemmrmw, the
// same; gout_gemm512, K = 512, 8.2 MB of weights read clean from other_); kinds ending in rmw then read and write B
// in place (u: rmw_kernel, as cuda/rope.cu turns the GEMM's q and k); then a read of y = 16-48 MB of lines not in L2
// (m), A and B re-read (qa, qb: what m pushed out of each) and the flush (h: what is still dirty).  An LRU gives up A
// first under every kind; an L2 that gives up a GEMM's output first shows B gone before A under the gemm kinds.
static int run_gout(int trial)
{
    const double d = 8, ys[] = {16, 24, 28, 32, 36, 40, 48};
    const int M = 250, N = 8000, Ks[] = {64, 512};   // M x N bf16 = 4 MB: exactly half B
    const char *kinds[] = {"gout_plain", "gout_gemm", "gout_gemm512", "gout_plainrmw", "gout_gemmrmw"};
    size_t half = (size_t)(d / 2 * MB) / 16;
    cublasHandle_t h = blas_new();
    void *X;
    CK(cudaMalloc(&X, (size_t)M * 512 * 2));
    CK(cudaMemset(X, 0, (size_t)M * 512 * 2));
    for (int K : Ks) {   // cuBLAS's first use of each shape, each followed by a flush
        const char *kind = K == 64 ? "gout_gemm" : "gout_gemm512";
        manifest("g0", trial, kind, d, 16);
        gemm_bf16(h, M, N, K, other_, X, probe_ + half);
        flush(trial, kind, d, 16, "flush");
    }
    for (const char *kind : kinds)
        for (double y : ys) {
            const bool gemm = strncmp(kind, "gout_gemm", 9) == 0, rmw = strstr(kind, "rmw") != nullptr;
            flush(trial, kind, d, y, "flush");
            write_half(0, trial, kind, d, y, half);   // A: older, dirty
            if (gemm) {   // B: newer, dirty, as a GEMM's output or by a plain kernel
                manifest("v", trial, kind, d, y);
                gemm_bf16(h, M, N, strcmp(kind, "gout_gemm512") == 0 ? 512 : 64, other_, X, probe_ + half);
            } else {
                write_half(1, trial, kind, d, y, half);
            }
            if (rmw) {
                manifest("u", trial, kind, d, y);
                rmw_kernel<<<grid_, BLOCK>>>(probe_ + half, half, (unsigned)trial * 7919u);
                CK(cudaGetLastError());
            }
            read_buf("m", trial, kind, d, y, stream_buf(trial, y), y);
            read_buf("qa", trial, kind, d, y, probe_, d / 2);
            read_buf("qb", trial, kind, d, y, probe_ + half, d / 2);
            flush(trial, kind, d, y, "h");
            trial++;
        }
    CK(cudaDeviceSynchronize());
    CK(cudaFree(X));
    cublasDestroy(h);
    return trial;
}

// Since session 47, `l2drain pool` asks whether the attention's read of its cached keys takes more of the L2 a byte
// than a plain read (docs/COST_MODEL.md "A line-level L2": the line forward matches the GPU's split of LLaDA-8B's Reuse
// write-back between the attention and O only when those keys are held in both halves of the L2, a plain read's lines
// in about 0.725 of them).  Per kind and y MB: the flush, A and B (4 MB each) written dirty (w, v), the stream of y MB
// (m), A and B re-read (qa, qb) and the flush (h), as `gout`'s plain kind; the stream: pool_plain a contiguous read
// (read_kernel), pool_kv the attention's pattern over LLaDA-8B's pool (pool_kernel by CTA: 12 items x 32 heads, 256-byte
// rows 512 KB apart), pool_grid the same bytes grid-stride (pool_kernel).  An L2 that holds the attention's lines as a
// plain read's shows A and B gone at the same y under all three.
static int run_pool(int trial)
{
    const double d = 8, ys[] = {8, 12, 16, 20, 24, 28, 32, 36, 40, 48};
    const int items = 12, heads = 32;
    const size_t slot_vec = 512 * KB / 16, lo_vec = 12 * 16 * KB / 16;   // LLaDA-8B: 32 layers x 16 KB; layer 12
    size_t half = (size_t)(d / 2 * MB) / 16;
    for (const char *kind : {"pool_plain", "pool_kv", "pool_grid"})
        for (double y : ys) {
            const size_t T = (size_t)(y * MB) / (2 * heads * 256);
            const double span = (double)T * 512 * KB / MB + 1;
            auto stream = [&](uint4 *W) {   // W: y MB of big_ (pool_plain's); the pool kinds take their span
                if (strcmp(kind, "pool_plain") == 0) {
                    read_buf("m", trial, kind, d, y, W, y);
                    return;
                }
                const bool cta = strcmp(kind, "pool_kv") == 0;
                manifest("m", trial, kind, d, y);
                pool_kernel<<<cta ? items * heads : grid_, cta ? 128 : BLOCK>>>(stream_buf(trial, span), T, items, heads,
                                                                                slot_vec, lo_vec, cta, out_);
                CK(cudaGetLastError());
            };
            halves_trial(trial, kind, d, y, [&] { write_halves(trial, kind, d, y, half); }, stream);
            trial++;
        }
    return trial;
}

// Since session 47, `l2drain stride` asks how the edge depends on the stride (call 130: the pool's 512 KB stride
// widens it): per kind stride<S> and y MB, A and B written dirty, then y MB read as 16 KB chunks S KB apart
// (pool_kernel grid-stride, 32 heads' K | V of a token a chunk; stride16 is a contiguous read), A and B re-read, the
// flush.
static int run_stride(int trial)
{
    const double d = 8, ys[] = {16, 20, 24, 28, 32, 36, 40, 48};
    const int strides_kb[] = {16, 64, 256, 512, 1024};
    size_t half = (size_t)(d / 2 * MB) / 16;
    char kind[32];
    for (int sk : strides_kb)
        for (double y : ys) {
            const size_t T = (size_t)(y * MB) / (16 * KB);
            const double span = (double)T * sk * KB / MB + 1;
            snprintf(kind, sizeof kind, "stride%d", sk);
            auto stream = [&](uint4 *) {
                manifest("m", trial, kind, d, y);
                pool_kernel<<<grid_, BLOCK>>>(stream_buf(trial, span), T, 1, 32, (size_t)sk * KB / 16, 0, 0, out_);
                CK(cudaGetLastError());
            };
            halves_trial(trial, kind, d, y, [&] { write_halves(trial, kind, d, y, half); }, stream);
            trial++;
        }
    return trial;
}

int main(int argc, char **argv)
{
    bool share = argc == 2 && strcmp(argv[1], "share") == 0;
    bool order = (argc == 2 || argc == 3) && strcmp(argv[1], "order") == 0;
    bool gemm = argc == 2 && strcmp(argv[1], "gemm") == 0, rmw = (argc == 2 || argc == 3) && strcmp(argv[1], "rmw") == 0;
    bool after = argc == 2 && strcmp(argv[1], "after") == 0, gout = argc == 2 && strcmp(argv[1], "gout") == 0;
    bool pool = argc == 2 && strcmp(argv[1], "pool") == 0, strided = argc == 2 && strcmp(argv[1], "stride") == 0;
    double d = 8;   // order and rmw: the probe's MB (even, 2 to 32: two halves in the 32 MB probe buffer)
    if (argc == 3 && (order || rmw)) {
        char *end;
        d = strtod(argv[2], &end);
        if (end == argv[2] || *end || !(d >= 2 && d <= 32) || d != 2 * (int)(d / 2)) {
            fprintf(stderr, "l2drain: %s: the probe's MB must be an even number from 2 to 32, got '%s'\n", argv[1],
                    argv[2]);
            return 2;
        }
    }
    if (argc > 3 || (argc == 3 && !order && !rmw) || (argc >= 2 && !share && !order && !gemm && !rmw && !after && !gout && !pool && !strided)) {
        fprintf(stderr, "usage: l2drain [share | order [D] | gemm | rmw [D] | after | gout | pool | stride]  (run under ncu, see the file's head; "
                        "share: the xread/xwrite kinds alone; order: the rehit/dclean/chit kinds alone; gemm: the "
                        "plain/gemm kinds alone; rmw: the plain/rmw kinds and the dirty bound's alone; D: the probe's MB, "
                        "8 by default, another runs its own x grid and no bound kinds; after: a GEMM's weights against "
                        "dirty lines written after them; gout: a GEMM's output against older dirty lines; pool: the "
                        "attention's read of its cached keys against a plain read; stride: 16 KB chunks read S KB apart)\n");
        return 2;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    grid_ = prop.multiProcessorCount * 4;
    printf("# l2drain: %s, %d SMs, L2 %d bytes\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize);
    CK(cudaMalloc(&probe_, 32 * MB));
    CK(cudaMalloc(&other_, 32 * MB));
    CK(cudaMalloc(&flush_, 256ull << 20));
    CK(cudaMalloc(&out_, 64));
    CK(cudaMalloc(&big_, BIG));
    CK(cudaMemset(big_, 4, BIG));
    CK(cudaMemset(other_, 1, 32 * MB));
    CK(cudaMemset(flush_, 2, 256ull << 20));
    CK(cudaMemset(probe_, 3, 32 * MB));
    CK(cudaDeviceSynchronize());
    if (share || order || gemm || rmw || after || gout || pool || strided) {
        int t = share ? run_share(0) : order ? run_order(0, d) : gemm ? run_gemm(0) : after ? run_after(0)
              : gout ? run_gout(0) : pool ? run_pool(0) : strided ? run_stride(0) : run_rmw(0, d);
        flush(t, "end", 0, 0, "flush");
        CK(cudaDeviceSynchronize());
        printf("# %d launches, %d trials\n", n_launch, t);
        return 0;
    }
    const double ds[] = {1, 8};
    const double us[] = {2, 5, 10, 20, 50, 100, 200, 500, 1000};
    const double reads[] = {0.5, 1, 2, 4, 8};
    const double idle_ms[] = {1, 10, 100};
    int trial = 0;
    for (double d : ds) {
        for (int one = 0; one < 2; one++)
            for (double x : us) {
                const char *k = one ? "spin1" : "spin";
                flush(trial, k, d, x, "flush");
                write_probe(trial, k, d, x, 0);
                manifest("m", trial, k, d, x);
                spin_kernel<<<one ? 1 : grid_, BLOCK>>>((unsigned long long)(x * 1e3), out_);
                CK(cudaGetLastError());
                flush(trial, k, d, x, "h");
                trial++;
            }
        for (double x : reads) {
            flush(trial, "read", d, x, "flush");
            write_probe(trial, "read", d, x, 0);
            manifest("m", trial, "read", d, x);
            read_kernel<<<grid_, BLOCK>>>(other_, (size_t)(x * MB) / 16, out_);
            CK(cudaGetLastError());
            flush(trial, "read", d, x, "h");
            trial++;
        }
        for (double x : idle_ms) {
            flush(trial, "none", d, x, "flush");
            write_probe(trial, "none", d, x, 0);
            CK(cudaDeviceSynchronize());
            usleep((useconds_t)(x * 1e3));
            flush(trial, "none", d, x, "h");
            trial++;
        }
        for (double x : us) {
            flush(trial, "slow", d, x, "flush");
            write_probe(trial, "slow", d, x, (unsigned long long)(x * 1e3));
            flush(trial, "slow", d, x, "h");
            trial++;
        }
    }
    const int strides_kb[] = {1, 56, 512};
    const double sreads[] = {0.5, 2, 8};
    char kind[32];
    for (int sk : strides_kb) {
        size_t sv = (size_t)sk * KB / 16, cv = KB / 16;
        snprintf(kind, sizeof kind, "sread%d", sk);
        for (double d : ds)
            for (double x : sreads) {
                flush(trial, kind, d, x, "flush");
                write_probe(trial, kind, d, x, 0);
                manifest("m", trial, kind, d, x);
                sread_kernel<<<grid_, BLOCK>>>(big_, (size_t)(x * MB) / KB, cv, sv, out_);
                CK(cudaGetLastError());
                flush(trial, kind, d, x, "h");
                trial++;
            }
        snprintf(kind, sizeof kind, "swrite%d", sk);
        for (double d : ds) {
            flush(trial, kind, d, 0, "flush");
            manifest("w", trial, kind, d, 0);
            swrite_kernel<<<grid_, BLOCK>>>(big_, (size_t)(d * MB) / KB, cv, sv, (unsigned)trial * 2654435761u);
            CK(cudaGetLastError());
            flush(trial, kind, d, 0, "h");
            trial++;
        }
    }
    const double logits[] = {0, 16, 39, 64};
    const double small_d[] = {0.5, 1};
    for (double l : logits)
        for (double d : small_d) {
            snprintf(kind, sizeof kind, "behind%d", (int)l);
            flush(trial, kind, d, 2, "flush");
            if (l > 0) {
                manifest("b", trial, kind, d, 2);
                write_kernel<<<grid_, BLOCK>>>(big_, (size_t)(l * MB) / 16, (unsigned)trial * 2654435761u, 0);
                CK(cudaGetLastError());
                manifest("r", trial, kind, d, 2);
                read_kernel<<<grid_, BLOCK>>>(big_, (size_t)(l * MB) / 16, out_);
                CK(cudaGetLastError());
            }
            write_probe(trial, kind, d, 2, 0);
            manifest("m", trial, kind, d, 2);
            read_kernel<<<grid_, BLOCK>>>(other_, (size_t)(2 * MB) / 16, out_);
            CK(cudaGetLastError());
            flush(trial, kind, d, 2, "h");
            trial++;
        }
    flush(trial, "end", 0, 0, "flush");
    CK(cudaDeviceSynchronize());
    printf("# %d launches, %d trials\n", n_launch, trial);
    return 0;
}
