// gemm_algo.cu - which kernel configuration cuBLASLt's heuristic picks for the backend's GEMM shapes, for
// core/cost's L2 replay (cost_l2.c's dkv_cost_gemm_tiles guesses tiles and split-K from a rule;
// docs/COST_MODEL.md "GEMM configurations from cuBLASLt").  For every shape it builds the descriptors
// exactly as cuda/gemm.cu's make_plan does (bf16 in and out, fp32 compute, y^T = op_T(w) x with
// m = N, n = T rows, k = K; the bias epilogue where the class has one), asks the heuristic for its
// first algorithm within the backend's 32 MiB workspace, prints the algorithm's configuration
// attributes, and runs it once, so that Nsight Compute's kernel names and grids can be set beside them:
//   nvcc -O3 -arch=sm_90 cuda/bench/gemm_algo.cu -lcublasLt -o gemm_algo
//   ./gemm_algo > gemm_algo.txt
//   ncu --csv --metrics launch__grid_size,launch__block_size --log-file gemm_algo.csv ./gemm_algo > /dev/null
// stdout: one line per shape, "g <model> <class> <T> <N> <K> <bias> algo <id> tile <id> splitk <n>
// reduction <scheme> swizzle <n> custom <n> stages <id> inner <id> cluster <id> ws <bytes> waves <x>",
// in launch order (a shape's GEMM is one kernel, or two with a split-K reduction).
//   ./gemm_algo splitk > gemm_splitk.txt
// asks the heuristic only (nothing runs), at every row count the backend's GEMM warm-up plans with (8, 16,
// ..., 8,192: core/model/gemm_warm.h; a run's shape of T rows takes its bucket's algorithm), one line
// each, "s <model> <class> <N> <K> <bias> <T> <splitk> <tile id>": what scripts/gemm_splitk.py turns
// into a profile's gemm_splitk block (docs/PROFILE_FORMAT.md).
//   ./gemm_algo grid > gemm_grid.txt
// the same question at the generic GEMM grid's (n, k) corners (cuda/profile_gemm.c's gemm_grid section: beta 0, no bias) at
// every warm-up row count and 12,288, 16,384, 24,576 rows, "q <N> <K> <T> <splitk> <tile id>" (the tile id is
// cuBLASLt's cublasLtMatmulTile_t: <weight rows>x<token rows>, as the kernel names; scripts/gemm_steps.py).
//   ncu --csv --cache-control none --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum \
//       --log-file wb.csv ./gemm_algo wb > wb.txt
// what a split GEMM leaves dirty: for a few shapes, each twice, flush the L2 (read 256 MiB), run the GEMM
// (its kernel and the split-K reduction), flush again: the second flush's DRAM writes are the dirty lines the
// GEMM left (its fp32 partials, its output) that survived; stdout "w <model> <class> <T> <N> <K> <splitk>
// <partial bytes> <output bytes>" before each trial (the kernels between two flush kernels are its GEMM's).
//   ncu --csv --cache-control none --clock-control base --kernel-name regex:"nvjet|splitKreduce" \
//       --metrics dram__bytes_read.sum,dram__bytes_write.sum --log-file reads_C.csv ./gemm_algo reads C > reads_C.txt
// a GEMM's HBM bytes as the backend's forward meets it, at every warm-up row count (8-8,192 by 8) of class C
// (0-7, CLASSES' order), under Nsight Compute with the SM clock locked to base (the clock the forward's GEMMs
// run at under load; at boost some kernels' reads differ: device call 71): flush the L2 (read 256 MiB), write
// the input rows (so they are resident and dirty, as the norm / attention / SwiGLU before it leaves them),
// run the GEMM with the backend's beta (1 for the O
// and down projections: they add into the residual stream, which the forward last touched a GEMM earlier:
// not resident).  stdout "r <model> <class> <T> <N> <K> <bias> <beta> <splitk> <tile id> <input bytes>
// <weight bytes> <output bytes>" before each trial; only cuBLASLt's kernels are profiled (flush_kernel and
// fill_kernel are not), so each trial is one nvjet kernel, then its splitKreduce_kernel where it splits K
// (scripts/gemm_reads.py pairs them and writes the profile's gemm_reads block).
//   ncu ... (as reads) --log-file pre.csv ./gemm_algo pre > pre.txt
// whether the way the input was written matters: a few shapes, each three times after each of three
// preparations of its input rows - 0 written alone (as in reads), 1 written by a walk that reads twice their
// bytes from another buffer row by row (the SwiGLU before the down projection), 2 the same reading three times
// (the attention before the O projection); stdout "p <model> <class> <T> <prep> <rep> <splitk> <tile id>"
// before each trial (scripts/gemm_reads.py pre).
//   ncu --csv --cache-control none --clock-control base --kernel-name regex:"nvjet|splitKreduce|readout_kernel" \
//       --metrics dram__bytes_read.sum,dram__bytes_write.sum --log-file left_C.csv ./gemm_algo left C [STEP] > left_C.txt
// what a GEMM leaves of its output in L2 for the row walk after it (the norm after O and down, the RoPE after
// q|k|v, the SwiGLU after gate|up): each trial as in reads (every STEP rows, default 64, to 8,192), then
// readout_kernel reads the output once in row order; its DRAM reads are the output not left in L2.  stdout
// "l <model> <class> <T> <N> <K> <bias> <beta> <splitk> <tile id> <input bytes> <weight bytes> <output bytes>"
// before each trial: the nvjet kernel, its splitKreduce_kernel where it splits K, then readout_kernel.
//   ncu ... (as left, with store_walk_kernel in the filter) --log-file store_C.csv ./gemm_algo store C [STEP] > store_C.txt
// what the fused RoPE-store finds of what the q|k|v GEMM (class C: 0 or 4) leaves: each trial as in left (every STEP
// rows, default 64, to 4,096), then store_walk_kernel, the store's memory walk (a row's q|k|v read, q and k written in
// place, k and v written to a pool row elsewhere): its DRAM reads are the output it did not find in L2.  stdout as
// left's, "t ..." (docs/COST_MODEL.md "The walk after a GEMM").
//   ncu --csv --cache-control none --clock-control base --kernel-name regex:"walk_kernel|flush_kernel" \
//       --metrics dram__bytes_read.sum,dram__bytes_write.sum --log-file walks.csv ./gemm_algo walks > walks.txt
// what a row walk keeps dirty of what it writes (the norms, the SwiGLU, ...): for outputs of 4 to 192 MB and
// 1-3 times as many bytes read per row, flush the L2, walk (read a cold source, write the output row by row),
// flush again: the walk's DRAM writes are what it wrote back during itself, the second flush's what it left
// dirty.  stdout "k <output bytes> <ratio>" before each trial (scripts/gemm_algo.py walks).
//   ncu --csv --clock-control base --kernel-name regex:"nvjet|splitKreduce" \
//       --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second --log-file clock_base.csv ./gemm_algo clock > clock_base.txt
//   (the same with --clock-control none: clock_free.*)
// how a GEMM's time follows the SM clock: every class at 16-8,192 rows (CLOCK_ROWS), the operands filled with
// a nonzero constant, each GEMM run CLOCK_REPS times; Nsight Compute flushes the caches before each launch
// (its default) and times it at the base clock, then with the clock free (the boost the GPU runs at between
// launches); each launch's sm__cycles_elapsed.avg.per_second is the clock it ran at.  stdout "c <model>
// <class> <T> <N> <K> <bias> <reps>" before each shape's launches (scripts/gemm_algo.py clock: each shape's
// sensitivity s = ln(t_base / t_free) / ln(f_free / f_base), the sim's clock model's input).
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "CUDA %s at line %d\n", cudaGetErrorString(e_), __LINE__); exit(1); } } while (0)
#define LT(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "cuBLASLt status %d at line %d\n", (int)s_, __LINE__); exit(1); } } while (0)

struct cls { const char *model, *name; int N, K, bias; };
// LLaDA-8B: hidden 4,096, 32 heads of 128 (MHA), FFN 12,288; Dream-7B: hidden 3,584, 28 heads and 4 KV
// heads of 128 (q|k|v with a bias), FFN 18,944 (core/model's presets)
static const cls CLASSES[] = {
    {"llada-8b", "qkv", 12288, 4096, 0}, {"llada-8b", "o", 4096, 4096, 0},
    {"llada-8b", "gate_up", 24576, 4096, 0}, {"llada-8b", "down", 4096, 12288, 0},
    {"dream-7b", "qkv", 4608, 3584, 1}, {"dream-7b", "o", 3584, 3584, 0},
    {"dream-7b", "gate_up", 37888, 3584, 0}, {"dream-7b", "down", 3584, 18944, 0},
};
static const int ROWS[] = {16, 32, 48, 64, 96, 128, 160, 192, 224, 256, 288, 320, 384, 512, 640, 768, 1024, 1664, 2112};

template <typename T> static T attr(const cublasLtMatmulAlgo_t *a, cublasLtMatmulAlgoConfigAttributes_t k)
{
    T v = 0;
    size_t got = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(a, k, &v, sizeof v, &got) != CUBLAS_STATUS_SUCCESS)
        return (T)-1;
    return v;
}

// The heuristic's first algorithm for class c at T rows, with cuda/gemm.cu's descriptors (the caller
// destroys *op, *a, *b, *cc).
static void choose(cublasLtHandle_t lt, const cls &c, int T, size_t ws_bytes, void *bias, cublasLtMatmulDesc_t *op,
                   cublasLtMatrixLayout_t *a, cublasLtMatrixLayout_t *b, cublasLtMatrixLayout_t *cc,
                   cublasLtMatmulHeuristicResult_t *r)
{
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LT(cublasLtMatmulDescCreate(op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT(cublasLtMatmulDescSetAttribute(*op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT(cublasLtMatmulDescSetAttribute(*op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (c.bias) {
        cublasLtEpilogue_t ep = CUBLASLT_EPILOGUE_BIAS;
        cudaDataType_t bt = CUDA_R_16BF;
        LT(cublasLtMatmulDescSetAttribute(*op, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep));
        LT(cublasLtMatmulDescSetAttribute(*op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
        LT(cublasLtMatmulDescSetAttribute(*op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    }
    LT(cublasLtMatrixLayoutCreate(a, CUDA_R_16BF, c.K, c.N, c.K));
    LT(cublasLtMatrixLayoutCreate(b, CUDA_R_16BF, c.K, T, c.K));
    LT(cublasLtMatrixLayoutCreate(cc, CUDA_R_16BF, c.N, T, c.N));
    cublasLtMatmulPreference_t pref;
    LT(cublasLtMatmulPreferenceCreate(&pref));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
    memset(r, 0, sizeof *r);
    int n = 0;
    LT(cublasLtMatmulAlgoGetHeuristic(lt, *op, *a, *b, *cc, *cc, pref, 1, r, &n));
    cublasLtMatmulPreferenceDestroy(pref);
    if (n == 0) {
        fprintf(stderr, "no algorithm for %s %s T=%d\n", c.model, c.name, T);
        exit(1);
    }
}

// Reads n 16-byte vectors of p once, in address order across the grid (a row walk's order).
static __device__ void read_all(const uint4 *p, size_t n, unsigned *sink)
{
    uint4 acc = make_uint4(0, 0, 0, 0);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = p[i];
        acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
    }
    if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x9e3779b9u)
        *sink = acc.x;
}

__global__ void flush_kernel(const uint4 *p, size_t n, unsigned *sink) { read_all(p, n, sink); }

__global__ void fill_kernel(uint4 *p, size_t n)
{
    const uint4 v = make_uint4(0x3c3c3c3cu, 0x3c3c3c3cu, 0x3c3c3c3cu, 0x3c3c3c3cu);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = v;
}

// Writes rows x width bf16 of dst, reading ratio x width of src per row first (16-byte vectors; width % 8 == 0):
// the access pattern of the SwiGLU (ratio 2) or, roughly, the attention (ratio 3) before a GEMM.
__global__ void walk_kernel(const uint4 *src, uint4 *dst, size_t rows, size_t width, int ratio)
{
    const size_t w = width / 8, n = rows * w;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / w, c = i % w;
        uint4 acc = src[r * w * ratio + c];
        for (int k = 1; k < ratio; k++) {
            uint4 v = src[r * w * ratio + k * w + c];
            acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
        }
        dst[i] = acc;
    }
}

// The GEMM output read once in row order: its lines not in L2 are its DRAM reads (`gemm_algo left`; a kernel of
// its own name, so that Nsight Compute's filter takes it and not the flushes).
__global__ void readout_kernel(const uint4 *p, size_t n, unsigned *sink) { read_all(p, n, sink); }

// The fused RoPE-store's memory walk after the q|k|v GEMM (`gemm_algo store`; cuda/fused_rope_store.cu: one block of
// 256 threads a row): read the row's q|k|v (w 16-byte vectors), write its q and k back in place (the first wqk) and
// its k and v (the last wkv) into a pool row elsewhere.
__global__ void store_walk_kernel(uint4 *qkv, uint4 *pool, size_t w, size_t wqk, size_t wkv)
{
    uint4 *row = qkv + blockIdx.x * w, *dst = pool + blockIdx.x * wkv;
    for (size_t c = threadIdx.x; c < w; c += blockDim.x) {
        uint4 v = row[c];
        if (c >= w - wkv)
            dst[c - (w - wkv)] = v;
        if (c < wqk) {
            v.x ^= 1u;
            row[c] = v;
        }
    }
}

// The trials of `gemm_algo walks` (see the top).
static int walks(void)
{
    const size_t width = 4096, maxF = (size_t)192 << 20, fl = (size_t)256 << 20;
    const int sizes_mb[] = {4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 64, 96, 128, 192};
    void *src, *dst, *f;
    unsigned *sink;
    CK(cudaMalloc(&src, 3 * maxF));
    CK(cudaMalloc(&dst, maxF));
    CK(cudaMalloc(&f, fl));
    CK(cudaMalloc((void **)&sink, 4));
    CK(cudaMemset(src, 0x3c, 3 * maxF));
    CK(cudaMemset(dst, 0, maxF));
    CK(cudaMemset(f, 1, fl));
    for (int ratio = 1; ratio <= 3; ratio++)
        for (int mb : sizes_mb) {
            const size_t F = (size_t)mb << 20, rows = F / (width * 2);
            printf("k %zu %d\n", F, ratio);
            fflush(stdout);
            flush_kernel<<<264, 512>>>((const uint4 *)f, fl / 16, sink);
            walk_kernel<<<264, 512>>>((const uint4 *)src, (uint4 *)dst, rows, width, ratio);
            flush_kernel<<<264, 512>>>((const uint4 *)f, fl / 16, sink);
            CK(cudaDeviceSynchronize());
        }
    cudaFree(src), cudaFree(dst), cudaFree(f), cudaFree(sink);
    return 0;
}

// The trials of `gemm_algo pre` (see the top).
static int prepared(cublasLtHandle_t lt)
{
    struct trial { int cls, T; } trials[] = {
        {3, 1440}, {3, 1600}, {3, 1664}, {3, 1728}, {3, 2112},   // LLaDA-8B down (144 x 128 tiles at 1,600 / 1,664)
        {1, 1440}, {1, 1664}, {1, 1728}, {1, 2112},              // LLaDA-8B O
        {5, 1664}, {5, 2112}, {7, 1664}, {7, 2112},              // Dream-7B O and down
        {0, 1664}, {2, 1664},                                    // LLaDA-8B q|k|v and gate|up (no preparation dependence expected)
    };
    size_t ws_bytes = (size_t)32 << 20, maxN = 24576, maxK = 18944, maxT = 2112, fl = (size_t)256 << 20;
    void *ws, *w, *x, *y, *bias, *f, *src;
    unsigned *sink;
    CK(cudaMalloc(&ws, ws_bytes));
    CK(cudaMalloc(&w, maxN * maxK * 2));
    CK(cudaMalloc(&x, maxT * maxK * 2));
    CK(cudaMalloc(&src, 3 * maxT * maxK * 2));
    CK(cudaMalloc(&y, maxT * maxN * 2));
    CK(cudaMalloc(&bias, maxN * 2));
    CK(cudaMalloc(&f, fl));
    CK(cudaMalloc((void **)&sink, 4));
    CK(cudaMemset(w, 0x3c, maxN * maxK * 2));
    CK(cudaMemset(src, 0x3c, 3 * maxT * maxK * 2));
    CK(cudaMemset(y, 0, maxT * maxN * 2));
    CK(cudaMemset(f, 1, fl));
    CK(cudaMemset(bias, 0, maxN * 2));
    const float one = 1;
    for (const trial &t : trials) {
        const cls &c = CLASSES[t.cls];
        const bool acc = strcmp(c.name, "o") == 0 || strcmp(c.name, "down") == 0;
        const float beta = acc ? 1.0f : 0.0f;
        cublasLtMatmulDesc_t op;
        cublasLtMatrixLayout_t a, b, cc;
        cublasLtMatmulHeuristicResult_t r;
        choose(lt, c, t.T, ws_bytes, bias, &op, &a, &b, &cc, &r);
        for (int prep = 0; prep < 3; prep++)
            for (int rep = 0; rep < 3; rep++) {
                printf("p %s %s %d %d %d %u %u\n", c.model, c.name, t.T, prep, rep,
                       attr<uint32_t>(&r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM), attr<uint32_t>(&r.algo, CUBLASLT_ALGO_CONFIG_TILE_ID));
                fflush(stdout);
                flush_kernel<<<264, 512>>>((const uint4 *)f, fl / 16, sink);
                if (prep == 0)
                    fill_kernel<<<264, 512>>>((uint4 *)x, (size_t)t.T * c.K * 2 / 16);
                else
                    walk_kernel<<<264, 512>>>((const uint4 *)src, (uint4 *)x, t.T, c.K, prep + 1);
                LT(cublasLtMatmul(lt, op, &one, w, a, x, b, &beta, y, cc, y, cc, &r.algo, ws, ws_bytes, 0));
                CK(cudaDeviceSynchronize());
            }
        cublasLtMatrixLayoutDestroy(a), cublasLtMatrixLayoutDestroy(b), cublasLtMatrixLayoutDestroy(cc);
        cublasLtMatmulDescDestroy(op);
    }
    cudaFree(ws), cudaFree(w), cudaFree(x), cudaFree(src), cudaFree(y), cudaFree(bias), cudaFree(f), cudaFree(sink);
    return 0;
}

// A GEMM's HBM bytes at every warm-up row count of class ci (see the top): the trials of `gemm_algo reads C` (mode
// 'r'); with left (`gemm_algo left C STEP`, mode 'l') every step rows, each GEMM followed by readout_kernel over its
// output; with store (`gemm_algo store C STEP`, mode 't', a q|k|v class) by store_walk_kernel instead, to 4,096 rows.
static int reads(cublasLtHandle_t lt, int ci, int step, char mode)
{
    const cls &c = CLASSES[ci];
    const bool acc = strcmp(c.name, "o") == 0 || strcmp(c.name, "down") == 0;
    size_t ws_bytes = (size_t)32 << 20, maxT = mode == 't' ? 4096 : 8192, fl = (size_t)256 << 20;
    const size_t hkv = (size_t)(c.N - c.K) / 2;   /* a q|k|v class: N = K (q) + 2 hkv (k, v) */
    void *ws, *w, *x, *y, *bias, *f, *pool = NULL;
    unsigned *sink;
    CK(cudaMalloc(&ws, ws_bytes));
    CK(cudaMalloc(&w, (size_t)c.N * c.K * 2));
    CK(cudaMalloc(&x, maxT * c.K * 2));
    CK(cudaMalloc(&y, maxT * c.N * 2));
    CK(cudaMalloc(&bias, (size_t)c.N * 2));
    CK(cudaMalloc(&f, fl));
    CK(cudaMalloc((void **)&sink, 4));
    if (mode == 't')
        CK(cudaMalloc(&pool, maxT * 2 * hkv * 2));
    CK(cudaMemset(w, 0x3c, (size_t)c.N * c.K * 2));   // bf16 0x3c3c ~ 0.0115, as in wb
    CK(cudaMemset(y, 0, maxT * c.N * 2));
    CK(cudaMemset(f, 1, fl));
    CK(cudaMemset(bias, 0, (size_t)c.N * 2));
    const float one = 1, beta = acc ? 1.0f : 0.0f;
    for (int T = step; T <= (int)maxT; T += step) {
        cublasLtMatmulDesc_t op;
        cublasLtMatrixLayout_t a, b, cc;
        cublasLtMatmulHeuristicResult_t r;
        choose(lt, c, T, ws_bytes, bias, &op, &a, &b, &cc, &r);
        printf("%c %s %s %d %d %d %d %d %u %u %.0f %.0f %.0f\n", mode, c.model, c.name, T, c.N, c.K, c.bias, acc ? 1 : 0,
               attr<uint32_t>(&r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM), attr<uint32_t>(&r.algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
               (double)T * c.K * 2, (double)c.N * c.K * 2, (double)T * c.N * 2);
        fflush(stdout);
        flush_kernel<<<264, 512>>>((const uint4 *)f, fl / 16, sink);
        fill_kernel<<<264, 512>>>((uint4 *)x, (size_t)T * c.K * 2 / 16);
        LT(cublasLtMatmul(lt, op, &one, w, a, x, b, &beta, y, cc, y, cc, &r.algo, ws, ws_bytes, 0));
        if (mode == 'l')
            readout_kernel<<<264, 512>>>((const uint4 *)y, (size_t)T * c.N * 2 / 16, sink);
        else if (mode == 't')
            store_walk_kernel<<<T, 256>>>((uint4 *)y, (uint4 *)pool, (size_t)c.N / 8, (c.K + hkv) / 8, 2 * hkv / 8);
        CK(cudaDeviceSynchronize());
        cublasLtMatrixLayoutDestroy(a), cublasLtMatrixLayoutDestroy(b), cublasLtMatrixLayoutDestroy(cc);
        cublasLtMatmulDescDestroy(op);
    }
    cudaFree(ws), cudaFree(w), cudaFree(x), cudaFree(y), cudaFree(bias), cudaFree(f), cudaFree(sink), cudaFree(pool);
    return 0;
}

// The dirty lines a split GEMM leaves (see the top): the trials of `gemm_algo wb`.
static int write_back(cublasLtHandle_t lt)
{
    struct trial { int cls, T; } trials[] = {
        {3, 64}, {3, 128}, {3, 288}, {3, 32}, {1, 32},   // LLaDA-8B down at 64 (3 splits), 128 (2), 288 (2), 32 (4); O at 32 (2)
        {7, 64}, {7, 128}, {7, 288}, {7, 32}, {5, 32},   // Dream-7B down at 64 (3), 128 (4), 288 (3), 32 (4); O at 32 (2)
        {0, 128}, {4, 288},                              // no split: LLaDA-8B q|k|v at 128, Dream-7B q|k|v at 288
    };
    size_t ws_bytes = (size_t)32 << 20, maxN = 12288, maxK = 18944, maxT = 288, fl = (size_t)256 << 20;
    void *ws, *w, *x, *y, *bias, *f;
    unsigned *sink;
    CK(cudaMalloc(&ws, ws_bytes));
    CK(cudaMalloc(&w, maxN * maxK * 2));
    CK(cudaMalloc(&x, maxT * maxK * 2));
    CK(cudaMalloc(&y, maxT * maxN * 2));
    CK(cudaMalloc(&bias, maxN * 2));
    CK(cudaMalloc(&f, fl));
    CK(cudaMalloc((void **)&sink, 4));
    CK(cudaMemset(w, 0x3c, maxN * maxK * 2));   // bf16 0x3c3c ~ 0.0115: nothing the L2 could compress
    CK(cudaMemset(x, 0x3c, maxT * maxK * 2));
    CK(cudaMemset(f, 1, fl));
    CK(cudaMemset(bias, 0, maxN * 2));
    const float one = 1, zero = 0;
    for (int rep = 0; rep < 2; rep++)
        for (const trial &t : trials) {
            const cls &c = CLASSES[t.cls];
            cublasLtMatmulDesc_t op;
            cublasLtMatrixLayout_t a, b, cc;
            cublasLtMatmulHeuristicResult_t r;
            choose(lt, c, t.T, ws_bytes, bias, &op, &a, &b, &cc, &r);
            unsigned sk = attr<uint32_t>(&r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
            printf("w %s %s %d %d %d %u %.0f %.0f\n", c.model, c.name, t.T, c.N, c.K, sk,
                   (sk > 1 ? sk : 0) * (double)t.T * c.N * 4, (double)t.T * c.N * 2);
            fflush(stdout);
            flush_kernel<<<264, 512>>>((const uint4 *)f, fl / 16, sink);
            LT(cublasLtMatmul(lt, op, &one, w, a, x, b, &zero, y, cc, y, cc, &r.algo, ws, ws_bytes, 0));
            flush_kernel<<<264, 512>>>((const uint4 *)f, fl / 16, sink);
            CK(cudaDeviceSynchronize());
            cublasLtMatrixLayoutDestroy(a), cublasLtMatrixLayoutDestroy(b), cublasLtMatrixLayoutDestroy(cc);
            cublasLtMatmulDescDestroy(op);
        }
    cudaFree(ws), cudaFree(w), cudaFree(x), cudaFree(y), cudaFree(bias), cudaFree(f), cudaFree(sink);
    return 0;
}

// The operands of one GEMM at up to maxT rows of the largest class (w: N x K weights, x: maxT x K input,
// y: maxT x N output, bias, the backend's 32 MiB workspace); nonzero: w and x hold a nonzero constant (the clock
// mode: the kernels draw power as on real data), else zeros.
struct operands { size_t ws_bytes; void *ws, *w, *x, *y, *bias; };
static operands alloc_operands(size_t maxT, bool nonzero)
{
    const size_t maxN = 37888, maxK = 18944;
    operands o = {(size_t)32 << 20, NULL, NULL, NULL, NULL, NULL};
    CK(cudaMalloc(&o.ws, o.ws_bytes));
    CK(cudaMalloc(&o.w, maxN * maxK * 2));
    CK(cudaMalloc(&o.x, maxT * maxK * 2));
    CK(cudaMalloc(&o.y, maxT * maxN * 2));
    CK(cudaMalloc(&o.bias, maxN * 2));
    if (nonzero) {
        fill_kernel<<<1024, 256>>>((uint4 *)o.w, maxN * maxK * 2 / 16);
        fill_kernel<<<1024, 256>>>((uint4 *)o.x, maxT * maxK * 2 / 16);
    } else {
        CK(cudaMemset(o.w, 0, maxN * maxK * 2));
        CK(cudaMemset(o.x, 0, maxT * maxK * 2));
    }
    CK(cudaMemset(o.bias, 0, maxN * 2));
    CK(cudaDeviceSynchronize());
    return o;
}

static void free_operands(operands *o)
{
    cudaFree(o->ws), cudaFree(o->w), cudaFree(o->x), cudaFree(o->y), cudaFree(o->bias);
}

static const int CLOCK_ROWS[] = {16, 32, 64, 128, 192, 256, 384, 512, 640, 768, 1024, 1280, 1536, 2048, 2560, 3072, 4096, 6144, 8192};
#define CLOCK_REPS 3

// Every class at each of the rows: the heuristic's algorithm, line(c, T, r) printed (and flushed) before reps
// launches of it on o, each synchronised.  The default and clock modes.
template <size_t R, class Line>
static void each_shape(cublasLtHandle_t lt, const operands &o, const int (&rows)[R], int reps, Line line)
{
    const float one = 1, zero = 0;
    for (const cls &c : CLASSES)
        for (int T : rows) {
            cublasLtMatmulDesc_t op;
            cublasLtMatrixLayout_t a, b, cc;
            cublasLtMatmulHeuristicResult_t r;
            choose(lt, c, T, o.ws_bytes, o.bias, &op, &a, &b, &cc, &r);
            line(c, T, r);
            fflush(stdout);
            for (int i = 0; i < reps; i++) {
                LT(cublasLtMatmul(lt, op, &one, o.w, a, o.x, b, &zero, o.y, cc, o.y, cc, &r.algo, o.ws, o.ws_bytes, 0));
                CK(cudaDeviceSynchronize());
            }
            cublasLtMatrixLayoutDestroy(a), cublasLtMatrixLayoutDestroy(b), cublasLtMatrixLayoutDestroy(cc);
            cublasLtMatmulDescDestroy(op);
        }
}

// The clock mode (see the top): each class at CLOCK_ROWS, CLOCK_REPS launches of the heuristic's algorithm.
static int clock_sens(cublasLtHandle_t lt)
{
    operands o = alloc_operands(8192, true);
    each_shape(lt, o, CLOCK_ROWS, CLOCK_REPS, [](const cls &c, int T, const cublasLtMatmulHeuristicResult_t &) {
        printf("c %s %s %d %d %d %d %d\n", c.model, c.name, T, c.N, c.K, c.bias, CLOCK_REPS);
    });
    free_operands(&o);
    return 0;
}

int main(int argc, char **argv)
{
    cublasLtHandle_t lt;
    LT(cublasLtCreate(&lt));
    if (argc > 1 && strcmp(argv[1], "wb") == 0) {
        int rc = write_back(lt);
        cublasLtDestroy(lt);
        return rc;
    }
    const bool left = argc > 1 && strcmp(argv[1], "left") == 0, store = argc > 1 && strcmp(argv[1], "store") == 0;
    if ((argc == 3 && strcmp(argv[1], "reads") == 0) || ((left || store) && (argc == 3 || argc == 4))) {
        char *end;
        long ci = strtol(argv[2], &end, 10), step = left || store ? 64 : 8;
        if (*end || ci < 0 || ci >= (long)(sizeof CLASSES / sizeof CLASSES[0])) {
            fprintf(stderr, "gemm_algo %s: class %s: expected 0..%d\n", argv[1], argv[2],
                    (int)(sizeof CLASSES / sizeof CLASSES[0]) - 1);
            return 2;
        }
        if (store && strcmp(CLASSES[ci].name, "qkv") != 0) {
            fprintf(stderr, "gemm_algo store: class %s is %s %s: expected a q|k|v class\n", argv[2],
                    CLASSES[ci].model, CLASSES[ci].name);
            return 2;
        }
        if (argc == 4 && ((step = strtol(argv[3], &end, 10)) < 8 || step % 8 || *end)) {
            fprintf(stderr, "gemm_algo %s: step %s: expected a multiple of 8 rows\n", argv[1], argv[3]);
            return 2;
        }
        int rc = reads(lt, (int)ci, (int)step, store ? 't' : left ? 'l' : 'r');
        cublasLtDestroy(lt);
        return rc;
    }
    if (argc == 2 && strcmp(argv[1], "walks") == 0) {
        int rc = walks();
        cublasLtDestroy(lt);
        return rc;
    }
    if (argc == 2 && strcmp(argv[1], "clock") == 0) {
        int rc = clock_sens(lt);
        cublasLtDestroy(lt);
        return rc;
    }
    if (argc == 2 && strcmp(argv[1], "pre") == 0) {
        int rc = prepared(lt);
        cublasLtDestroy(lt);
        return rc;
    }
    if (argc > 1 && strcmp(argv[1], "splitk") == 0) {   // the heuristic's split-K at every warm-up row count
        void *bias;
        CK(cudaMalloc(&bias, 37888 * 2));
        for (const cls &c : CLASSES)
            for (int T = 8; T <= 8192; T += 8) {
                cublasLtMatmulDesc_t op;
                cublasLtMatrixLayout_t a, b, cc;
                cublasLtMatmulHeuristicResult_t r;
                choose(lt, c, T, (size_t)32 << 20, bias, &op, &a, &b, &cc, &r);
                printf("s %s %s %d %d %d %d %u %u\n", c.model, c.name, c.N, c.K, c.bias, T,
                       attr<uint32_t>(&r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                       attr<uint32_t>(&r.algo, CUBLASLT_ALGO_CONFIG_TILE_ID));
                cublasLtMatrixLayoutDestroy(a), cublasLtMatrixLayoutDestroy(b), cublasLtMatrixLayoutDestroy(cc);
                cublasLtMatmulDescDestroy(op);
            }
        cudaFree(bias);
        cublasLtDestroy(lt);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "grid") == 0) {   // the heuristic's configuration at the generic grid's corners
        // n and k of `dkv profile`'s gemm_grid section (cuda/profile_gemm.c), beta 0, no bias; every warm-up row count
        // and the grid's rows above it
        static const int ns[] = {2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152, 65536},
                         ks[] = {2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768}, big[] = {12288, 16384, 24576};
        for (int N : ns)
            for (int K : ks)
                for (int i = 0; i < 1024 + 3; i++) {
                    int T = i < 1024 ? 8 * (i + 1) : big[i - 1024];
                    cls c = {"grid", "gemm", N, K, 0};
                    cublasLtMatmulDesc_t op;
                    cublasLtMatrixLayout_t a, b, cc;
                    cublasLtMatmulHeuristicResult_t r;
                    choose(lt, c, T, (size_t)32 << 20, NULL, &op, &a, &b, &cc, &r);
                    printf("q %d %d %d %u %u\n", N, K, T, attr<uint32_t>(&r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                           attr<uint32_t>(&r.algo, CUBLASLT_ALGO_CONFIG_TILE_ID));
                    cublasLtMatrixLayoutDestroy(a), cublasLtMatrixLayoutDestroy(b), cublasLtMatrixLayoutDestroy(cc);
                    cublasLtMatmulDescDestroy(op);
                }
        cublasLtDestroy(lt);
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "usage: gemm_algo [splitk | grid | wb | reads CLASS | left CLASS [STEP] | store CLASS [STEP] | pre | walks | clock]\n");
        return 2;
    }
    operands o = alloc_operands(2112, false);
    each_shape(lt, o, ROWS, 1, [](const cls &c, int T, const cublasLtMatmulHeuristicResult_t &r) {
        const cublasLtMatmulAlgo_t *al = &r.algo;
        printf("g %s %s %d %d %d %d algo %d tile %u splitk %u reduction %u swizzle %u custom %u stages %u inner %u "
               "cluster %u ws %zu waves %.3f\n",
               c.model, c.name, T, c.N, c.K, c.bias, attr<int>(al, CUBLASLT_ALGO_CONFIG_ID),
               attr<uint32_t>(al, CUBLASLT_ALGO_CONFIG_TILE_ID), attr<uint32_t>(al, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
               attr<uint32_t>(al, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME),
               attr<uint32_t>(al, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
               attr<uint32_t>(al, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION),
               attr<uint32_t>(al, CUBLASLT_ALGO_CONFIG_STAGES_ID),
               (uint32_t)attr<uint16_t>(al, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID),
               (uint32_t)attr<uint16_t>(al, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID), r.workspaceSize, r.wavesCount);
    });
    free_operands(&o);
    cublasLtDestroy(lt);
    return 0;
}
