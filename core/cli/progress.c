/* progress.c - the terminal progress bar. */
#include "cli/progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void dkv_cli_progress_init(dkv_cli_progress *p, bool quiet)
{
    p->enabled = !quiet && isatty(STDERR_FILENO);
    p->last_draw_s = 0;
    p->line_open = false;
}

void dkv_cli_progress_cb(void *ud, const char *label, double done, double total)
{
    dkv_cli_progress *p = ud;
    if (!p || !p->enabled)
        return;
    bool finished = total > 0 && done >= total;
    double t = now_s();
    if (!finished && t - p->last_draw_s < 0.1)
        return;
    p->last_draw_s = t;
    enum { W = 30 };
    char bar[W + 1];
    if (total > 0) {
        double f = done / total;
        f = f < 0 ? 0 : f > 1 ? 1 : f;
        int k = (int)(f * W + 0.5);
        for (int i = 0; i < W; i++)
            bar[i] = i < k ? '#' : '.';
        bar[W] = '\0';
        fprintf(stderr, "\r\033[K%-24.24s [%s] %5.1f%% (%.0f/%.0f)", label ? label : "", bar, 100 * f, done, total);
    } else {
        fprintf(stderr, "\r\033[K%-24.24s %.0f", label ? label : "", done);
    }
    p->line_open = !finished;
    if (finished)
        fputc('\n', stderr);
    fflush(stderr);
}

void dkv_cli_progress_end(dkv_cli_progress *p)
{
    if (p && p->enabled && p->line_open) {
        fputc('\n', stderr);
        p->line_open = false;
    }
}
