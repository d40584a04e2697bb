// l2probe.cu - how the GPU's L2 keeps lines between kernels, for core/cost's L2 replay (cost_l2.c,
// docs/COST_MODEL.md "What the L2 keeps between kernels").  Meant to run under Nsight Compute with
// caches left alone between kernels, one row per kernel:
//   nvcc -O3 -arch=sm_90 cuda/bench/l2probe.cu -o l2probe
//   ncu --csv --cache-control none --clock-control none \
//       --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
//       --log-file l2probe.csv ./l2probe > l2probe.txt
//   /usr/bin/python3 scripts/l2probe.py l2probe.txt l2probe.csv
// stdout is the manifest: one line per kernel launch, in launch order ("k <n> <role> <trial> <kind>
// <probe MB> <stream MB> <copies>"), which scripts/l2probe.py pairs with Nsight Compute's rows.
//
// Trials (each starts from an L2 flushed by reading a 256 MiB buffer, whose own writes are what the
// trial before left dirty):
//   survive  kind dirty|clean: write (dirty) or read (clean) D bytes of a probe buffer; read S bytes of
//            a stream buffer, each line by `copies` CTAs (1: as a GEMM's weights at few token rows;
//            2: as an operand every column of CTAs reads); then re-read the probe (clean: its DRAM reads
//            are the lines the stream pushed out) or flush (dirty: the flush's DRAM writes are the dirty
//            lines that survived; the stream's own writes are those it pushed out).
//   bound    write D bytes, then a one-block kernel, then flush: the write kernel's own DRAM writes are
//            what the L2 would not keep dirty.
//   rows     write D bytes of x, then a kernel that reads x and writes D bytes of y row by row (as a norm
//            does), then flush.
//   (since call 58) survive with clean 8 MB probes and streams read by 4, 16, 64 CTAs a line; inplace:
//            write D bytes of x, then a kernel that rewrites x in place row by row (as the RoPE does),
//            then flush.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); exit(1);} } while (0)

static const int BLOCK = 256;

// Reads n_vec 16-byte vectors; with copies c each vector is read by c CTAs (CTA b and b + grid / c
// cover the same range).
__global__ void read_kernel(const uint4 *__restrict__ p, size_t n_vec, int copies, unsigned *out)
{
    unsigned per = gridDim.x / copies, b = blockIdx.x % per;
    size_t stride = (size_t)per * blockDim.x;
    unsigned acc = 0;
    for (size_t e = (size_t)b * blockDim.x + threadIdx.x; e < n_vec; e += stride) {
        uint4 v = p[e];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u)
        out[0] = acc;
}

__global__ void write_kernel(uint4 *__restrict__ p, size_t n_vec, unsigned seed)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n_vec; e += stride)
        p[e] = make_uint4((unsigned)e ^ seed, seed, (unsigned)(e >> 32), ~seed);
}

// Reads x and writes y, a CTA per 16 KiB row in turn (as rmsnorm walks its rows).
__global__ void rows_kernel(const uint4 *__restrict__ x, uint4 *__restrict__ y, size_t n_vec)
{
    const size_t row = 1024;   // 16 KiB
    for (size_t r0 = (size_t)blockIdx.x * row; r0 < n_vec; r0 += (size_t)gridDim.x * row)
        for (size_t e = r0 + threadIdx.x; e < r0 + row && e < n_vec; e += blockDim.x) {
            uint4 v = x[e];
            y[e] = make_uint4(v.y, v.z, v.w, v.x ^ 1u);
        }
}

// Reads x and rewrites it in place, a CTA per 16 KiB row in turn (as the RoPE rotates q and k).
__global__ void inplace_kernel(uint4 *__restrict__ x, size_t n_vec)
{
    const size_t row = 1024;   // 16 KiB
    for (size_t r0 = (size_t)blockIdx.x * row; r0 < n_vec; r0 += (size_t)gridDim.x * row)
        for (size_t e = r0 + threadIdx.x; e < r0 + row && e < n_vec; e += blockDim.x) {
            uint4 v = x[e];
            x[e] = make_uint4(v.y, v.z, v.w, v.x ^ 1u);
        }
}

__global__ void tiny_kernel(unsigned *out) { if (threadIdx.x == 0) out[1] = 1; }

static int n_launch = 0;
static int grid_;
static uint4 *probe_, *probe2_, *stream_, *flush_;
static unsigned *out_;
static const size_t MB = 1000000;

static void manifest(const char *role, int trial, const char *kind, double d_mb, double s_mb, int copies)
{
    printf("k %d %s %d %s %.3f %.3f %d\n", n_launch++, role, trial, kind, d_mb, s_mb, copies);
}

static void flush(int trial, const char *kind, double d, double s, int c)
{
    manifest("flush", trial, kind, d, s, c);
    read_kernel<<<grid_, BLOCK>>>(flush_, (256ull << 20) / 16, 1, out_);
    CK(cudaGetLastError());
}

static void rd(uint4 *p, double mb, int copies, const char *role, int trial, const char *kind, double d, double s)
{
    manifest(role, trial, kind, d, s, copies);
    read_kernel<<<grid_ * copies, BLOCK>>>(p, (size_t)(mb * MB) / 16, copies, out_);
    CK(cudaGetLastError());
}

static void wr(uint4 *p, double mb, const char *role, int trial, const char *kind, double d, double s, int c)
{
    manifest(role, trial, kind, d, s, c);
    write_kernel<<<grid_, BLOCK>>>(p, (size_t)(mb * MB) / 16, (unsigned)trial * 2654435761u);
    CK(cudaGetLastError());
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        fprintf(stderr, "usage: l2probe  (no arguments; run under ncu, see the file's head)\n");
        return 2;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    grid_ = prop.multiProcessorCount * 4;
    printf("# l2probe: %s, %d SMs, L2 %d bytes\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize);
    CK(cudaMalloc(&probe_, 80 * MB));
    CK(cudaMalloc(&probe2_, 80 * MB));
    CK(cudaMalloc(&stream_, 256 * MB));
    CK(cudaMalloc(&flush_, 256ull << 20));
    CK(cudaMalloc(&out_, 64));
    CK(cudaMemset(stream_, 1, 256 * MB));
    CK(cudaMemset(flush_, 2, 256ull << 20));
    CK(cudaMemset(probe_, 3, 80 * MB));
    CK(cudaMemset(probe2_, 4, 80 * MB));
    CK(cudaDeviceSynchronize());
    const double streams[] = {0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 48, 56, 64, 80, 100, 128};
    const double probes[] = {2, 8};
    int trial = 0;
    for (int kind = 0; kind < 2; kind++)
        for (int copies = 1; copies <= 2; copies++)
            for (double d : probes)
                for (double s : streams) {
                    const char *k = kind ? "clean" : "dirty";
                    flush(trial, k, d, s, copies);
                    if (kind)
                        rd(probe_, d, 1, "w", trial, k, d, s);
                    else
                        wr(probe_, d, "w", trial, k, d, s, copies);
                    if (s > 0)
                        rd(stream_, s, copies, "r", trial, k, d, s);
                    if (kind)
                        rd(probe_, d, 1, "h", trial, k, d, s);
                    else
                        flush(trial, "dirty_h", d, s, copies);
                    trial++;
                }
    const double bounds[] = {4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 64};
    for (double d : bounds) {
        flush(trial, "bound", d, 0, 1);
        wr(probe_, d, "w", trial, "bound", d, 0, 1);
        manifest("t", trial, "bound", d, 0, 1);
        tiny_kernel<<<1, 32>>>(out_);
        flush(trial, "bound_h", d, 0, 1);
        trial++;
    }
    const double rows[] = {4, 8, 12, 17.3, 24, 32};
    for (double d : rows) {
        flush(trial, "rows", d, 0, 1);
        wr(probe_, d, "w", trial, "rows", d, 0, 1);
        manifest("rw", trial, "rows", d, 0, 1);
        rows_kernel<<<grid_, BLOCK>>>(probe_, probe2_, (size_t)(d * MB) / 16);
        CK(cudaGetLastError());
        flush(trial, "rows_h", d, 0, 1);
        trial++;
    }
    // session 18, call 58: streams read by more CTAs a line (a GEMM's input is read by every CTA column),
    // clean 8 MB probes only; and a probe rewritten in place row by row after it was written
    const int many[] = {4, 16, 64};
    for (int copies : many)
        for (double s : streams) {
            flush(trial, "clean", 8, s, copies);
            rd(probe_, 8, 1, "w", trial, "clean", 8, s);
            if (s > 0)
                rd(stream_, s, copies, "r", trial, "clean", 8, s);
            rd(probe_, 8, 1, "h", trial, "clean", 8, s);
            trial++;
        }
    const double inplace[] = {8, 17.3, 24, 34.6, 48};
    for (double d : inplace) {
        flush(trial, "inplace", d, 0, 1);
        wr(probe_, d, "w", trial, "inplace", d, 0, 1);
        manifest("ip", trial, "inplace", d, 0, 1);
        inplace_kernel<<<grid_, BLOCK>>>(probe_, (size_t)(d * MB) / 16);
        CK(cudaGetLastError());
        flush(trial, "inplace_h", d, 0, 1);
        trial++;
    }
    flush(trial, "end", 0, 0, 1);
    CK(cudaDeviceSynchronize());
    printf("# %d launches, %d trials\n", n_launch, trial);
    return 0;
}
