/* cmd_merge.c - `dkv merge OUT.h5 IN.h5...`: copies every run of the inputs into one file. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "io/h5.h"

int dkv_cmd_merge(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        puts("usage: dkv merge OUT.h5 IN.h5 [IN.h5...]\n"
             "\n"
             "Copies every run of the input files (e.g. the shards written by dkv run --shard i/N) into\n"
             "OUT.h5, with their tables and attributes.  Two runs of the same name are an error and\n"
             "OUT.h5 is then not written.");
        return DKV_EXIT_OK;
    }
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-') {
            fprintf(stderr, "dkv merge: unknown option '%s' (try dkv merge --help)\n", argv[i]);
            return DKV_EXIT_USAGE;
        }
    if (argc < 3) {
        fprintf(stderr, "usage: dkv merge OUT.h5 IN.h5 [IN.h5...]\n");
        return DKV_EXIT_USAGE;
    }
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[1], argv[i]) == 0) {
            fprintf(stderr, "dkv merge: output %s is also an input\n", argv[1]);
            return DKV_EXIT_USAGE;
        }
    dkv_err err = {0};
    dkv_h5 *out;
    if (dkv_h5_create(argv[1], &out, &err) != DKV_OK) {
        fprintf(stderr, "dkv merge: %s\n", err.msg);
        return DKV_EXIT_ERROR;
    }
    size_t total = 0;
    for (int i = 2; i < argc; i++) {
        dkv_h5 *in;
        if (dkv_h5_open_read(argv[i], &in, &err) != DKV_OK) {
            fprintf(stderr, "dkv merge: %s\n", err.msg);
            dkv_h5_discard(out);
            return DKV_EXIT_ERROR;
        }
        for (size_t k = 0; k < dkv_h5_run_count(in); k++) {
            if (dkv_h5_run_copy(out, in, dkv_h5_run_name_at(in, k), &err) != DKV_OK) {
                fprintf(stderr, "dkv merge: %s\n", err.msg);
                dkv_h5_close(in, NULL);
                dkv_h5_discard(out);
                return DKV_EXIT_ERROR;
            }
            total++;
        }
        dkv_h5_close(in, NULL);
    }
    if (dkv_h5_close(out, &err) != DKV_OK) {
        fprintf(stderr, "dkv merge: %s\n", err.msg);
        return DKV_EXIT_ERROR;
    }
    printf("%s: %zu runs from %d files\n", argv[1], total, argc - 2);
    return DKV_EXIT_OK;
}
