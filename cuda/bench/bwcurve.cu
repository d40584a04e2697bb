// bwcurve.cu - (pol) HBM read efficiency vs contiguous run length, and attention-like KV reads
// under the t-major and layer-major layouts (docs/POLICIES.md, "KV layout").  Standalone:
//   nvcc -O3 -arch=sm_90 cuda/bench/bwcurve.cu -o bwcurve && ./bwcurve   (on a GPU machine)
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); exit(1);} } while (0)

__global__ void runs_kernel(const uint4 *__restrict__ buf, size_t n_vec, unsigned run_vec, size_t n_runs,
                            unsigned long long mult, unsigned *out)
{
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    unsigned acc = 0;
    for (size_t e = tid; e < n_vec; e += stride) {
        size_t run = e / run_vec, off = e % run_vec;
        size_t slot = (run * mult) & (n_runs - 1);
        uint4 v = buf[slot * run_vec + off];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) out[0] = acc;
}

// one layer of an attention-like read: CTA (head, 64-token tile) loads K and V head vectors.
// layout 0: t-major [t][l][kv][h][d]; 1: blocks of bt tokens, inside [l][kv][h][t][d]
__global__ void attn_read(const uint4 *__restrict__ buf, int T, int L, int H, int l, int layout, int bt, unsigned *out)
{
    const int DV = 16; // 128 bf16 = 16 x 16 B
    int h = blockIdx.x, t0 = blockIdx.y * 64;
    if (l < 0) l = blockIdx.z;
    unsigned acc = 0;
    for (int i = threadIdx.x; i < 2 * 64 * DV; i += blockDim.x) {
        int kv = i / (64 * DV), r = i % (64 * DV), tt = r / DV, d = r % DV, t = t0 + tt;
        if (t >= T) continue;
        size_t idx;
        if (layout == 0) idx = ((((size_t)t * L + l) * 2 + kv) * H + h) * DV + d;
        else {
            size_t blk = t / bt, tin = t % bt;
            idx = (((((blk * L + l) * 2 + kv) * H + h) * bt) + tin) * DV + d;
        }
        uint4 v = buf[idx];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) out[0] = acc;
}

int main()
{
    const size_t bytes = 1ull << 31; // 2 GiB
    uint4 *buf; unsigned *out;
    CK(cudaMalloc(&buf, bytes)); CK(cudaMalloc(&out, 4));
    CK(cudaMemset(buf, 1, bytes));
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    size_t n_vec = bytes / 16;
    int grid = 132 * 16;
    printf("# run_bytes read_GBps\n");
    double contig = 0;
    for (unsigned run = 16; run <= 65536 * 4; run *= 2) {
        unsigned rv = run / 16; size_t n_runs = n_vec / rv;
        runs_kernel<<<grid, 256>>>(buf, n_vec, rv, n_runs, 0x9E3779B97F4A7C15ull | 1, out);
        CK(cudaDeviceSynchronize());
        cudaEventRecord(a);
        for (int k = 0; k < 5; k++) runs_kernel<<<grid, 256>>>(buf, n_vec, rv, n_runs, 0x9E3779B97F4A7C15ull | 1, out);
        cudaEventRecord(b); CK(cudaEventSynchronize(b));
        float ms; cudaEventElapsedTime(&ms, a, b);
        double gbps = 5.0 * bytes / (ms * 1e-3) / 1e9;
        if (run == 65536 * 4) contig = gbps;
        printf("run %7u %8.1f\n", run, gbps);
    }
    printf("contiguous_ref %.1f\n", contig);
    struct { const char *name; int L, H, T; } shapes[] = {{"llada", 32, 32, 768}, {"llada", 32, 32, 2560}, {"dream", 28, 4, 768}, {"dream", 28, 4, 2560}};
    for (auto &s : shapes) {
        for (int layout = 0; layout < 2; layout++)
            for (int bt : {32, 256}) {
                if (layout == 0 && bt == 256) continue;
                size_t need = (size_t)((s.T + 255) / 256 * 256) * s.L * 2 * s.H * 256;
                if (need > bytes) continue;
                dim3 g(s.H, (s.T + 63) / 64);
                for (int l = 0; l < s.L; l++) attn_read<<<g, 128>>>(buf, s.T, s.L, s.H, l, layout, bt, out);
                CK(cudaDeviceSynchronize());
                cudaEventRecord(a);
                for (int rep = 0; rep < 10; rep++)
                    for (int l = 0; l < s.L; l++) attn_read<<<g, 128>>>(buf, s.T, s.L, s.H, l, layout, bt, out);
                cudaEventRecord(b); CK(cudaEventSynchronize(b));
                float ms; cudaEventElapsedTime(&ms, a, b);
                double rd = 10.0 * s.T * s.L * 2.0 * s.H * 256;
                double gbps = rd / (ms * 1e-3) / 1e9;
                dim3 g3(s.H, (s.T + 63) / 64, s.L);
                cudaEventRecord(a);
                for (int rep = 0; rep < 10; rep++) attn_read<<<g3, 128>>>(buf, s.T, s.L, s.H, -1, layout, bt, out);
                cudaEventRecord(b); CK(cudaEventSynchronize(b));
                float ms3; cudaEventElapsedTime(&ms3, a, b);
                double gbps3 = rd / (ms3 * 1e-3) / 1e9;
                printf("attn %s T=%d layout=%s bt=%d per-layer-launch %.1f GB/s (%.3f, %.1f us/layer) all-layers %.1f GB/s (%.3f)\n",
                       s.name, s.T, layout ? "layer_major" : "tmajor", layout ? bt : 0, gbps, gbps / contig,
                       ms * 1e3 / (10 * s.L), gbps3, gbps3 / contig);
            }
    }
    return 0;
}
