/* profile_write.h - dkv profile's run and writer (core/cli/profile_write.c; CUDA builds only). */
#ifndef DKV_CLI_PROFILE_WRITE_H
#define DKV_CLI_PROFILE_WRITE_H

#include <stdint.h>
#include <stdio.h>

#include "cuda/profile.h"
#include "model/model.h"

typedef struct dkv_cli_profile_args {
    const char       *out, *name, *grid;
    const dkv_model  *models;
    const char *const *model_names;
    uint32_t          n_models;
    int               quick, estimate, device, l2_warm;
    uint32_t          min_rows;   /* GEMM sections: shapes of at least this many rows (0: all) */
    uint32_t          gemm_step;  /* --gemm-step: the class GEMMs at every multiple of this many rows (0: the grid) */
    bool              states;     /* --states: every shape also timed cool and hot (dkv_prof_opts.states) */
    bool              probe;      /* --probe: the SMs' own clock over each row's timed calls (dkv_prof_opts.probe) */
    double            sustain_s;  /* --sustain: seconds a sustained shape (dkv_prof_opts.sustain_s; 0: none) */
    uint32_t          sustain_windows;   /* --sustain-windows (0: the default) */
    double            sustain_lead_s;    /* --sustain-lead (< 0: the default) */
    const double     *sustain_gaps_s;    /* --sustain-gaps, seconds (dkv_prof_opts.sustain_gaps_s) */
    uint32_t          n_sustain_gaps;
    double            deadline;
    uint32_t          repeats, warmup;
    int               argc;
    char            **argv;
} dkv_cli_profile_args;

/* What the file says besides the measurements. */
typedef struct dkv_cli_profile_meta {
    const char        *name, *date, *command;
    int                quick;
    const char *const *models;
    uint32_t           n_models;
} dkv_cli_profile_meta;

/* Writes p as a profile file (core/cli/profile_lua.c; no CUDA needed). */
void dkv_cli_profile_write(FILE *f, const dkv_prof *p, const dkv_cli_profile_meta *m);

/* Runs the profile (or only the estimate) and writes the file; returns the exit code. */
int dkv_cli_profile_main(const dkv_cli_profile_args *a);

#endif
