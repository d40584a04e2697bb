/* cmd_ncu_import.c - `dkv ncu-import NCU.csv RESULTS.h5 --run NAME`: Nsight Compute's measured HBM
 * bytes and kernel times, per kernel and per kernel class, into a run (analysis/ncu.h; docs/COMPARE.md). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "analysis/ncu.h"

static void help(void)
{
    puts("usage: dkv ncu-import NCU.csv RESULTS.h5 --run NAME [--replace]\n"
         "\n"
         "Reads what `ncu --csv --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum,\n"
         "gpu__time_duration.sum dkv run SCRIPT.lua ...` printed (saved to NCU.csv), classifies every kernel\n"
         "into dkv's kernel classes (by name; cuBLAS/CUTLASS GEMMs by launch order, docs/COMPARE.md) and adds\n"
         "the tables ncu_kernels and ncu_classes to run NAME of RESULTS.h5 (the file is rewritten through\n"
         "RESULTS.h5.tmp).  `dkv compare RESULTS.h5 SIM.h5` then compares the simulator's bytes per class.\n"
         "\n"
         "  --run NAME   the run the profiled process wrote (dkv.save name)\n"
         "  --replace    replace ncu tables the run already has\n"
         "exit status: 0 imported, 1 error (file:line of a malformed CSV line), 2 usage error");
}

int dkv_cmd_ncu_import(int argc, char **argv)
{
    const char *files[2] = {NULL, NULL}, *run = NULL;
    bool replace = false;
    int nf = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            help();
            return DKV_EXIT_OK;
        } else if (strcmp(argv[i], "--run") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "dkv ncu-import: --run needs a run name\n");
                return DKV_EXIT_USAGE;
            }
            run = argv[++i];
        } else if (strcmp(argv[i], "--replace") == 0) {
            replace = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "dkv ncu-import: unknown option '%s' (try dkv ncu-import --help)\n", argv[i]);
            return DKV_EXIT_USAGE;
        } else if (nf < 2) {
            files[nf++] = argv[i];
        } else {
            fprintf(stderr, "dkv ncu-import: too many arguments ('%s')\n", argv[i]);
            return DKV_EXIT_USAGE;
        }
    }
    if (nf != 2 || !run) {
        fprintf(stderr, "usage: dkv ncu-import NCU.csv RESULTS.h5 --run NAME [--replace]\n");
        return DKV_EXIT_USAGE;
    }
    dkv_err err = {0};
    dkv_ncu_report rep;
    if (dkv_ncu_import(files[0], files[1], run, replace, &rep, &err) != DKV_OK) {
        fprintf(stderr, "dkv ncu-import: %s\n", err.msg);
        return DKV_EXIT_ERROR;
    }
    printf("%s: %zu kernels into run '%s' of %s (%zu GEMMs placed by launch order, %zu unknown, %zu with a metric "
           "missing)\n", files[0], rep.n_kernels, run, files[1], rep.n_gemm_by_order, rep.n_unknown, rep.n_incomplete);
    printf("%-12s %8s %14s %14s %12s\n", "class", "kernels", "read_bytes", "write_bytes", "time_s");
    for (int c = 0; c < DKV_NCU_NTOTALS; c++) {
        const dkv_ncu_class_total *t = &rep.tot[c];
        if (t->n_kernels)
            printf("%-12s %8llu %14.6g %14.6g %12.6g\n", dkv_cmp_class_name((uint32_t)c),
                   (unsigned long long)t->n_kernels, t->read_bytes, t->write_bytes, t->time_s);
    }
    for (size_t i = 0; i < rep.n_unknown_names; i++)
        printf("unknown kernel: %s\n", rep.unknown[i]);
    return DKV_EXIT_OK;
}
