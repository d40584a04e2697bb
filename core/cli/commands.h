/* commands.h - the dkv subcommands.  Each lives in core/cli/cmd_<name>.c and is called with
 * argv[0] == "<name>".  Return value is the process exit code:
 *   0 success, 1 experiment/runtime error, 2 usage error.
 * Every command prints --help to stdout, errors to stderr naming file:line where one exists. */
#ifndef DKV_CLI_COMMANDS_H
#define DKV_CLI_COMMANDS_H

enum { DKV_EXIT_OK = 0, DKV_EXIT_ERROR = 1, DKV_EXIT_USAGE = 2 };

int dkv_cmd_run(int argc, char **argv);     /* dkv run SCRIPT.lua [-o FILE.h5] [-D k=v] [--shard i/N] */
int dkv_cmd_info(int argc, char **argv);    /* dkv info FILE.h5 */
int dkv_cmd_merge(int argc, char **argv);   /* dkv merge OUT.h5 IN.h5...  (core/cli/cmd_merge.c) */
int dkv_cmd_replay(int argc, char **argv);  /* dkv replay TRACE --mem KIND [options]   (core/cli/cmd_replay.c) */
int dkv_cmd_bench(int argc, char **argv);   /* dkv bench mem [options]                 (core/cli/cmd_bench.c) */
int dkv_cmd_compare(int argc, char **argv); /* dkv compare REAL.h5 SIM.h5 [options]     (core/cli/cmd_compare.c) */
int dkv_cmd_ncu_import(int argc, char **argv); /* dkv ncu-import NCU.csv RESULTS.h5 --run NAME (cmd_ncu_import.c) */
int dkv_cmd_calibrate(int argc, char **argv); /* dkv calibrate MEASURED.h5... -o PRESET.lua  (cmd_calibrate.c) */
int dkv_cmd_timeline(int argc, char **argv);  /* dkv timeline FILE.h5 --run NAME -o TRACE.json (cmd_timeline.c) */
int dkv_cmd_profile(int argc, char **argv);   /* dkv profile -o FILE.lua  (cmd_profile.c; runs on the GPU) */

/* Project root (scripts/, experiments/, datasets/presets/): $DKV_ROOT, else the nearest folder
 * above the executable holding datasets/presets, else "."  (core/cli/cmd_run.c). */
#include <stddef.h>
void dkv_cli_find_root(char *out, size_t n);

#endif
