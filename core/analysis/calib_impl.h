/* calib_impl.h - private state of a calibration, shared by calib.c and calib_write.c. */
#ifndef DKV_ANALYSIS_CALIB_IMPL_H
#define DKV_ANALYSIS_CALIB_IMPL_H

#include "analysis/calib.h"

typedef struct calib_kpt {   /* one kernels record */
    dkv_calib_kernel k;
    uint32_t src;            /* input index (UINT32_MAX: added directly) */
    uint64_t step;
    /* the simulated run's record of the same step and class (dkv_calib_pair_sim) */
    bool paired;
    uint32_t n_sim;          /* the simulator's launches */
    double roof_s;           /* the simulator's roofline time: its time less n_sim launch overheads */
} calib_kpt;

typedef struct calib_ppt {   /* one step with PCIe traffic */
    double h2d, d2h, time_s;
    uint32_t src;
    uint64_t step;
} calib_ppt;

typedef struct calib_bpt {   /* one bandwidth measurement */
    double run_bytes, bytes_per_s;
    uint32_t src;
} calib_bpt;

typedef struct calib_input {
    char *file, *run;        /* run NULL for a bwcurve text file */
    uint64_t workload_fp;    /* 0 for text files */
    char *desc;              /* workload.kind, n, prompt, gen, decode.cache, model */
    bool pinned;             /* policies.offload.pinned */
} calib_input;

struct dkv_calib {
    char base[64];
    double hbm_bw, flops_bf16, base_launch_s;
    bool have_base;
    calib_kpt *k;
    size_t nk, capk;
    calib_ppt *p;
    size_t np, capp;
    calib_bpt *b;
    size_t nb, capb;
    calib_input *in;
    size_t nin, capin;
    size_t skipped_unpinned;  /* PCIe steps of runs with pageable buffers, not used */
};

#endif
