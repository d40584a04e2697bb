/* progress.h - a one-line progress bar on stderr, drawn only when stderr is a terminal. */
#ifndef DKV_CLI_PROGRESS_H
#define DKV_CLI_PROGRESS_H

#include <stdbool.h>

typedef struct dkv_cli_progress {
    bool enabled;        /* stderr is a terminal and the user did not ask for quiet */
    double last_draw_s;  /* monotonic time of the last redraw (redraws at most 10 per second) */
    bool line_open;      /* a bar is on screen without its final newline */
} dkv_cli_progress;

/* Sets enabled from isatty(2) unless quiet. */
void dkv_cli_progress_init(dkv_cli_progress *p, bool quiet);
/* A dkv_progress_fn: ud is the dkv_cli_progress. */
void dkv_cli_progress_cb(void *ud, const char *label, double done, double total);
/* Ends an open bar line (before printing other output to stderr). */
void dkv_cli_progress_end(dkv_cli_progress *p);

#endif
