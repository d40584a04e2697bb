/* cmd_merge.c - `dkv merge [--force | --append] OUT.h5 IN.h5...`: copies every run of the inputs
 * into one file, written as OUT.h5.tmp and renamed onto OUT.h5 only when every copy succeeded. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "io/h5.h"

static void merge_usage(FILE *out)
{
    fputs("usage: dkv merge [--force | --append] OUT.h5 IN.h5 [IN.h5...]\n"
          "\n"
          "Copies every run of the input files (e.g. the shards written by dkv run --shard i/N) into\n"
          "OUT.h5, with their tables and attributes.  Two runs of the same name are an error and\n"
          "OUT.h5 is then not written.  An existing OUT.h5 is refused unless one of:\n"
          "\n"
          "  --force    replace OUT.h5 with the merge of the inputs\n"
          "  --append   keep OUT.h5's runs and add the inputs' runs after them\n"
          "\n"
          "The merge is written to OUT.h5.tmp and replaces OUT.h5 only when it is complete; a failed\n"
          "merge (a full disk, a duplicate run) leaves OUT.h5 as it was.\n",
          out);
}

static bool file_size(const char *p, unsigned long long *size)
{
    struct stat st;
    if (stat(p, &st) != 0)
        return false;
    *size = (unsigned long long)st.st_size;
    return true;
}

/* Copies every run of path into out; adds their count to *total. */
static int copy_all(dkv_h5 *out, const char *path, size_t *total)
{
    dkv_err err = {0};
    dkv_h5 *in;
    if (dkv_h5_open_read(path, &in, &err) != DKV_OK) {
        fprintf(stderr, "dkv merge: %s\n", err.msg);
        return -1;
    }
    for (size_t k = 0; k < dkv_h5_run_count(in); k++) {
        if (dkv_h5_run_copy(out, in, dkv_h5_run_name_at(in, k), &err) != DKV_OK) {
            fprintf(stderr, "dkv merge: %s\n", err.msg);
            dkv_h5_close(in, NULL);
            return -1;
        }
        (*total)++;
    }
    dkv_h5_close(in, NULL);
    return 0;
}

int dkv_cmd_merge(int argc, char **argv)
{
    bool force = false, append = false;
    const char *files[argc > 0 ? argc : 1];
    int nfiles = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            merge_usage(stdout);
            return DKV_EXIT_OK;
        } else if (strcmp(argv[i], "--force") == 0) {
            force = true;
        } else if (strcmp(argv[i], "--append") == 0) {
            append = true;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "dkv merge: unknown option '%s' (try dkv merge --help)\n", argv[i]);
            return DKV_EXIT_USAGE;
        } else {
            files[nfiles++] = argv[i];
        }
    }
    if (nfiles < 2) {
        fprintf(stderr, "usage: dkv merge [--force | --append] OUT.h5 IN.h5 [IN.h5...]\n");
        return DKV_EXIT_USAGE;
    }
    if (force && append) {
        fprintf(stderr, "dkv merge: --force replaces OUT.h5 and --append adds to it: give one\n");
        return DKV_EXIT_USAGE;
    }
    const char *outp = files[0];
    for (int i = 1; i < nfiles; i++)
        if (strcmp(outp, files[i]) == 0) {
            fprintf(stderr, "dkv merge: output %s is also an input%s\n", outp,
                    append ? " (--append already keeps its runs)" : "");
            return DKV_EXIT_USAGE;
        }
    unsigned long long need = 0, sz;
    bool out_exists = file_size(outp, &sz);
    if (out_exists && !force && !append) {
        fprintf(stderr, "dkv merge: %s exists; it is not replaced (give --force to replace it, or --append to add "
                        "the runs to it)\n", outp);
        return DKV_EXIT_USAGE;
    }
    if (append && out_exists)
        need += sz;
    for (int i = 1; i < nfiles; i++)
        if (file_size(files[i], &sz))
            need += sz;
    dkv_err err = {0};
    /* libhdf5 1.10 crashes inside H5Ocopy when the disk fills: refuse up front instead */
    if (dkv_h5_check_space(outp, need + need / 16 + (64u << 10), &err) != DKV_OK) {
        fprintf(stderr, "dkv merge: %s%s%s\n", err.msg, out_exists ? "; nothing written, unchanged: " : "",
                out_exists ? outp : "");
        return DKV_EXIT_ERROR;
    }
    dkv_h5 *out;
    if (dkv_h5_create(outp, &out, &err) != DKV_OK) {
        fprintf(stderr, "dkv merge: %s\n", err.msg);
        return DKV_EXIT_ERROR;
    }
    size_t total = 0, kept = 0;
    if (append && out_exists) {
        if (copy_all(out, outp, &kept) != 0) {
            dkv_h5_discard(out);
            return DKV_EXIT_ERROR;
        }
    }
    for (int i = 1; i < nfiles; i++)
        if (copy_all(out, files[i], &total) != 0) {
            dkv_h5_discard(out);
            fprintf(stderr, "dkv merge: nothing written%s%s%s\n", out_exists ? "; " : "", out_exists ? outp : "",
                    out_exists ? " is unchanged" : "");
            return DKV_EXIT_ERROR;
        }
    if (dkv_h5_close(out, &err) != DKV_OK) {
        fprintf(stderr, "dkv merge: %s\n", err.msg);
        char tmpname[4200];
        snprintf(tmpname, sizeof tmpname, "%s.tmp", outp);
        remove(tmpname);   /* our own incomplete copy; the inputs are untouched */
        fprintf(stderr, "dkv merge: the incomplete '%s' was removed%s%s%s\n", tmpname, out_exists ? "; " : "",
                out_exists ? outp : "", out_exists ? " is unchanged" : "");
        return DKV_EXIT_ERROR;
    }
    if (append && out_exists)
        printf("%s: %zu runs kept, %zu runs added from %d files\n", outp, kept, total, nfiles - 1);
    else
        printf("%s: %zu runs from %d files\n", outp, total, nfiles - 1);
    return DKV_EXIT_OK;
}
