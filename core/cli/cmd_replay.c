/* cmd_replay.c - `dkv replay`: placeholder until the memory-manager work lands. */
#include <stdio.h>

#include "cli/commands.h"

int dkv_cmd_replay(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dkv replay: not built yet\n");
    return DKV_EXIT_ERROR;
}
