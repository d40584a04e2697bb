/* main.c - the dkv command: dispatches to the subcommands of commands.h. */
#include <hdf5.h>
#include <lua.h>
#include <stdio.h>
#include <string.h>

#include "dkv_commit.h"
#include "cli/commands.h"

static void usage(FILE *out)
{
    fputs("usage: dkv <command> [options]\n"
          "\n"
          "Memory behaviour of diffusion-LLM inference: experiments are Lua scripts, results HDF5 files.\n"
          "\n"
          "commands:\n"
          "  run SCRIPT.lua [-o FILE.h5] [-D name=value ...] [--shard i/N]\n"
          "                      run an experiment script, writing its runs to FILE.h5\n"
          "  info FILE.h5        list the runs of a results file, their parameters and summaries (--brief, --json)\n"
          "  merge OUT.h5 IN.h5...  join results files (e.g. the shards of a sweep)\n"
          "  replay TRACE --mem KIND [options]  replay a memory trace through a memory manager\n"
          "  bench mem [options]    micro-benchmarks of the memory managers\n"
          "  compare REAL.h5 SIM.h5 [options]  a hardware run against its simulation (docs/COMPARE.md)\n"
          "  ncu-import NCU.csv RESULTS.h5 --run NAME  Nsight Compute HBM bytes per kernel into a run\n"
          "  calibrate MEASURED.h5... -o PRESET.lua  fit a GPU preset to measured runs\n"
          "  timeline FILE.h5 --run NAME -o TRACE.json  a run as a Perfetto / Chrome trace\n"
          "  profile -o FILE.lua   time the CUDA backend's kernels on this GPU (a profile for the simulator)\n"
          "\n"
          "  dkv --help | -h     this text;  dkv <command> --help  the command's options\n"
          "  dkv --version       version, git commit, HDF5 and Lua versions\n"
          "\n"
          "exit status: 0 success, 1 experiment or runtime error, 2 usage error\n"
          "docs: README.md, docs/LUA_API.md, docs/HDF5_SCHEMA.md\n",
          out);
}

static void version(void)
{
    unsigned maj = 0, min = 0, rel = 0;
    H5get_libversion(&maj, &min, &rel);
    printf("dkv %s (git %s)\nHDF5 %u.%u.%u, %s\n", DKV_VERSION, DKV_GIT_COMMIT, maj, min, rel, LUA_RELEASE);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return DKV_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return DKV_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0 || strcmp(cmd, "version") == 0) {
        version();
        return DKV_EXIT_OK;
    }
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {{"run", dkv_cmd_run},     {"info", dkv_cmd_info},   {"merge", dkv_cmd_merge},
                {"replay", dkv_cmd_replay}, {"bench", dkv_cmd_bench}, {"compare", dkv_cmd_compare}, {"ncu-import", dkv_cmd_ncu_import},
                {"calibrate", dkv_cmd_calibrate}, {"timeline", dkv_cmd_timeline}, {"profile", dkv_cmd_profile}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(cmd, cmds[i].name) == 0)
            return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "dkv: unknown command or option '%s' (try dkv --help)\n", cmd);
    return DKV_EXIT_USAGE;
}
