/* compare_impl.h - private state of a comparison, shared by compare.c and compare_out.c. */
#ifndef DKV_ANALYSIS_COMPARE_IMPL_H
#define DKV_ANALYSIS_COMPARE_IMPL_H

#include "analysis/compare.h"

struct dkv_cmp {
    dkv_cmp_info info;
    char *real_file, *real_run, *sim_file, *sim_run;   /* owned; info points at them */
    dkv_cmp_quantity *q;
    size_t nq, capq;
    dkv_cmp_diff *d;      /* key/real/sim strings owned */
    size_t nd;
    dkv_cmp_step *steps;
    size_t nsteps;
};

/* Compares two configuration literals (either may be NULL) into c's differences and
 * fingerprints; file and run names go into error messages. */
dkv_status dkv_cmp__config(dkv_cmp *c, const char *rfile, const char *rname, const char *rcfg, const char *sfile,
                          const char *sname, const char *scfg, dkv_err *err);

#endif
