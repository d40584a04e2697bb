/* cmd_bench.c - `dkv bench`: placeholder until the memory-manager work lands. */
#include <stdio.h>

#include "cli/commands.h"

int dkv_cmd_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dkv bench: not built yet\n");
    return DKV_EXIT_ERROR;
}
