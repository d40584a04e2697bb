/* info.h - the compact and machine-readable forms of `dkv info` (core/cli/info_brief.c). */
#ifndef DKV_CLI_INFO_H
#define DKV_CLI_INFO_H

#include "io/h5.h"

/* Prints the runs of file (only run `only` when not NULL): with json, one JSON document (every
 * run attribute but the script and the config literal, params, flat config, summary with units,
 * table sizes; brief limits config to the differing keys and summary to the headline metrics);
 * without, one line per run: its backend, the parameters that differ between the runs of the
 * file, tokens/s, requests/s, P99 latency, peak KV (GiB), KV external fragmentation at peak,
 * done/requests.  Returns a DKV_EXIT_* code; errors go to stderr. */
int dkv_info_brief(const char *file, const char *only, int json, int brief);

#endif
