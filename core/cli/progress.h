/* progress.h - progress bars on stderr, drawn only when stderr is a terminal.
 *
 * Two levels: an outer bar (a sweep: any label but "simulate") and, below it, one live inner bar
 * (the run in progress: label "simulate", from dkv.simulate / dkv.execute).  A finished inner bar
 * is cleared; a finished outer bar stays as one line.  Before the script prints to stdout the
 * bars are cleared (callback with label NULL) and drawn again on the next update.  Nothing at all
 * is written when stderr is not a terminal. */
#ifndef DKV_CLI_PROGRESS_H
#define DKV_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdio.h>

typedef struct dkv_cli_bar {
    bool on;
    char label[32];
    double done, total;
} dkv_cli_bar;

typedef struct dkv_cli_progress {
    bool enabled;        /* stderr is a terminal and the user did not ask for quiet */
    FILE *out;           /* stderr (tests may point it elsewhere) */
    double last_draw_s;  /* monotonic time of the last redraw (redraws at most 10 per second) */
    int lines;           /* bar lines on screen, the cursor at the end of the last one */
    dkv_cli_bar outer, inner;
} dkv_cli_progress;

/* Sets enabled from isatty(2) unless quiet. */
void dkv_cli_progress_init(dkv_cli_progress *p, bool quiet);
/* A dkv_progress_fn: ud is the dkv_cli_progress.  label NULL: clear the bars (output follows). */
void dkv_cli_progress_cb(void *ud, const char *label, double done, double total);
/* Clears the bars; an unfinished outer bar stays as a line (before other output to stderr). */
void dkv_cli_progress_end(dkv_cli_progress *p);

#endif
