/* timeline.h - a run of a results file as Chrome / Perfetto trace-event JSON (core/cli/timeline.c),
 * for `dkv timeline` (core/cli/cmd_timeline.c).  docs/HDF5_SCHEMA.md ("Timelines") describes the
 * tracks.  Reads the tables dkv.save writes (steps, kernels, memory, requests), which simulated
 * and executed runs share. */
#ifndef DKV_CLI_TIMELINE_H
#define DKV_CLI_TIMELINE_H

#include <stdint.h>
#include <stdio.h>

#include "io/h5.h"

typedef struct dkv_timeline_counts {
    uint64_t steps, kernels, copies, counters, requests;
} dkv_timeline_counts;

/* Writes the trace of `run` (open for reading) to out.  label names the process ("run NAME").
 * DKV_ENOENT when the run has neither a steps nor a requests table; other errors name the table. */
dkv_status dkv_timeline_write(dkv_h5_run *run, const char *label, FILE *out, dkv_timeline_counts *counts,
                              dkv_err *err);

#endif
