/* cmd_timeline.c - `dkv timeline FILE.h5 --run NAME -o TRACE.json`: a run as Chrome / Perfetto
 * trace-event JSON (core/cli/timeline.c builds it; docs/HDF5_SCHEMA.md, "Timelines"). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "cli/timeline.h"

static void timeline_usage(FILE *out)
{
    fputs("usage: dkv timeline FILE.h5 --run NAME -o TRACE.json\n"
          "\n"
          "Writes run NAME as Chrome trace-event JSON for https://ui.perfetto.dev or chrome://tracing:\n"
          "steps as slices per engine instance, the kernel classes of each step inside it (when\n"
          "recorded: cfg.record.kernels), PCIe copies on their own track, memory by tag as counter\n"
          "tracks (MiB), requests as async slices from arrival to finish.  Simulated (dkv.simulate)\n"
          "and executed (dkv.execute) runs have the same tables and give the same tracks.\n"
          "  --run NAME   the run (dkv info --brief FILE.h5 lists them); optional when the file has one\n"
          "  -o FILE      output (written as FILE.tmp, renamed when complete); an existing FILE is\n"
          "               replaced only when it is a JSON trace (its first character { or [)\n",
          out);
}

/* An existing output is replaced only when it is a JSON trace (an earlier timeline): a folder, the results file or
 * any other file named by mistake is refused. */
static bool replaceable(const char *outp)
{
    struct stat st;
    if (stat(outp, &st) != 0)
        return true;
    if (S_ISDIR(st.st_mode)) {
        fprintf(stderr, "dkv timeline: -o %s is a folder: give the trace file's name\n", outp);
        return false;
    }
    FILE *fp = fopen(outp, "rb");
    int c = ' ';
    while (fp && (c = fgetc(fp)) != EOF && (c == ' ' || c == '\n' || c == '\t' || c == '\r'))
        ;
    if (fp)
        fclose(fp);
    if (c == '{' || c == '[')
        return true;
    fprintf(stderr, "dkv timeline: -o %s exists and is not a JSON trace: it is not replaced; give another name, or "
            "move it away\n", outp);
    return false;
}

int dkv_cmd_timeline(int argc, char **argv)
{
    const char *file = NULL, *name = NULL, *outp = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            timeline_usage(stdout);
            return DKV_EXIT_OK;
        } else if (strcmp(argv[i], "--run") == 0 && i + 1 < argc) {
            name = argv[++i];
        } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            outp = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "dkv timeline: unknown option or missing value '%s' (try dkv timeline --help)\n", argv[i]);
            return DKV_EXIT_USAGE;
        } else if (!file) {
            file = argv[i];
        } else {
            fprintf(stderr, "dkv timeline: one file at a time ('%s')\n", argv[i]);
            return DKV_EXIT_USAGE;
        }
    }
    if (!file || !outp) {
        fprintf(stderr, "dkv timeline: %s is required\n", !file ? "FILE.h5" : "-o TRACE.json");
        timeline_usage(stderr);
        return DKV_EXIT_USAGE;
    }
    if (!replaceable(outp))
        return DKV_EXIT_USAGE;
    dkv_err err = {0};
    dkv_h5 *f;
    if (dkv_h5_open_read(file, &f, &err) != DKV_OK) {
        fprintf(stderr, "dkv timeline: %s\n", err.msg);
        return DKV_EXIT_ERROR;
    }
    if (!name && dkv_h5_run_count(f) == 1)
        name = dkv_h5_run_name_at(f, 0);
    if (!name) {
        fprintf(stderr, "dkv timeline: %s has %zu runs: pick one with --run NAME (dkv info --brief %s)\n", file,
                dkv_h5_run_count(f), file);
        dkv_h5_close(f, NULL);
        return DKV_EXIT_USAGE;
    }
    dkv_h5_run *run;
    if (dkv_h5_run_open(f, name, &run, &err) != DKV_OK) {
        fprintf(stderr, "dkv timeline: %s: %s\n", file, err.msg);
        dkv_h5_close(f, NULL);
        return DKV_EXIT_ERROR;
    }
    char tmp[4200], label[320];
    snprintf(tmp, sizeof tmp, "%s.tmp", outp);
    char *backend = NULL, *device = NULL;
    dkv_h5_attr_get_str(run, NULL, "backend", &backend, NULL);
    dkv_h5_attr_get_str(run, NULL, "device", &device, NULL);
    snprintf(label, sizeof label, "%s (%s%s%s)", name, backend ? backend : "?", device && *device ? ", " : "",
             device ? device : "");
    free(backend);
    free(device);
    int rc = DKV_EXIT_OK;
    FILE *out = fopen(tmp, "w");
    dkv_timeline_counts c;
    if (!out) {
        fprintf(stderr, "dkv timeline: %s: cannot write: %s\n", tmp, strerror(errno));
        rc = DKV_EXIT_ERROR;
    } else if (dkv_timeline_write(run, label, out, &c, &err) != DKV_OK) {
        fprintf(stderr, "dkv timeline: %s: %s\n", file, err.msg);
        rc = DKV_EXIT_ERROR;
    }
    if (out && fclose(out) != 0 && rc == DKV_EXIT_OK) {
        fprintf(stderr, "dkv timeline: %s: %s\n", tmp, strerror(errno));
        rc = DKV_EXIT_ERROR;
    }
    if (rc == DKV_EXIT_OK && rename(tmp, outp) != 0) {
        fprintf(stderr, "dkv timeline: renaming %s to %s: %s\n", tmp, outp, strerror(errno));
        rc = DKV_EXIT_ERROR;
    }
    if (rc != DKV_EXIT_OK && out)
        remove(tmp);
    else if (rc == DKV_EXIT_OK)
        printf("wrote %s: %" PRIu64 " steps, %" PRIu64 " kernel-class slices, %" PRIu64 " PCIe slices, %" PRIu64
               " counter samples, %" PRIu64 " requests (open it in https://ui.perfetto.dev)\n",
               outp, c.steps, c.kernels, c.copies, c.counters, c.requests);
    dkv_h5_run_free(run);
    dkv_h5_close(f, NULL);
    return rc;
}
