/* profile_write.h - dkv profile's run and writer (core/cli/profile_write.c; CUDA builds only). */
#ifndef DKV_CLI_PROFILE_WRITE_H
#define DKV_CLI_PROFILE_WRITE_H

#include <stdint.h>

#include "model/model.h"

typedef struct dkv_cli_profile_args {
    const char       *out, *name, *grid;
    const dkv_model  *models;
    const char *const *model_names;
    uint32_t          n_models;
    int               quick, estimate, device;
    double            deadline;
    uint32_t          repeats, warmup;
    int               argc;
    char            **argv;
} dkv_cli_profile_args;

/* Runs the profile (or only the estimate) and writes the file; returns the exit code. */
int dkv_cli_profile_main(const dkv_cli_profile_args *a);

#endif
