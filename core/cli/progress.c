/* progress.c - the terminal progress bars (progress.h). */
#include "cli/progress.h"

#include <string.h>
#include <unistd.h>

#include "util/mono.h"

void dkv_cli_progress_init(dkv_cli_progress *p, bool quiet)
{
    memset(p, 0, sizeof *p);
    p->enabled = !quiet && isatty(STDERR_FILENO);
    p->out = stderr;
}

static void draw_bar(FILE *o, const dkv_cli_bar *b, bool indent)
{
    enum { W = 30 };
    char bar[W + 1];
    const char *pad = indent ? "  " : "";
    if (b->total > 0) {
        double f = b->done / b->total;
        f = f < 0 ? 0 : f > 1 ? 1 : f;
        int k = (int)(f * W + 0.5);
        for (int i = 0; i < W; i++)
            bar[i] = i < k ? '#' : '.';
        bar[W] = '\0';
        fprintf(o, "\033[K%s%-22.22s [%s] %5.1f%% (%.0f/%.0f)", pad, b->label, bar, 100 * f, b->done, b->total);
    } else {
        fprintf(o, "\033[K%s%-22.22s %.0f", pad, b->label, b->done);
    }
}

/* Moves to the first bar line and erases from there to the end of the screen. */
static void clear_block(dkv_cli_progress *p)
{
    if (p->lines == 0)
        return;
    fputc('\r', p->out);
    if (p->lines > 1)
        fprintf(p->out, "\033[%dA", p->lines - 1);
    fputs("\033[J", p->out);
    p->lines = 0;
}

static void redraw(dkv_cli_progress *p)
{
    clear_block(p);
    if (p->outer.on) {
        draw_bar(p->out, &p->outer, false);
        p->lines = 1;
    }
    if (p->inner.on) {
        if (p->lines)
            fputc('\n', p->out);
        draw_bar(p->out, &p->inner, p->outer.on);
        p->lines++;
    }
}

void dkv_cli_progress_cb(void *ud, const char *label, double done, double total)
{
    dkv_cli_progress *p = ud;
    if (!p || !p->enabled)
        return;
    if (!label) {   /* the script is about to print: get out of the way */
        clear_block(p);
        fflush(p->out);
        return;
    }
    bool finished = total > 0 && done >= total;
    bool inner = strcmp(label, "simulate") == 0;
    dkv_cli_bar *b = inner ? &p->inner : &p->outer;
    double t = dkv_mono_s();
    bool changed_bar = !b->on || strncmp(b->label, label, sizeof b->label - 1) != 0;
    if (!finished && !changed_bar && t - p->last_draw_s < 0.1) {
        b->done = done, b->total = total;   /* drawn at the next redraw */
        return;
    }
    p->last_draw_s = t;
    b->on = true;
    snprintf(b->label, sizeof b->label, "%s", label);
    b->done = done, b->total = total;
    if (finished && inner) {
        b->on = false;          /* a finished run: its bar goes away */
        redraw(p);
    } else if (finished) {
        bool had_inner = p->inner.on;
        p->inner.on = false;    /* the sweep is done: leave its bar as a line */
        redraw(p);
        fputc('\n', p->out);
        p->lines = 0;
        b->on = false;
        p->inner.on = had_inner;
        if (had_inner)
            redraw(p);
    } else {
        redraw(p);
    }
    fflush(p->out);
}

void dkv_cli_progress_end(dkv_cli_progress *p)
{
    if (!p || !p->enabled)
        return;
    p->inner.on = false;
    redraw(p);
    if (p->lines)
        fputc('\n', p->out);
    p->lines = 0;
    p->outer.on = false;
    fflush(p->out);
}
