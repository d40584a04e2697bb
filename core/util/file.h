/* file.h - opening an input file, the one place: a path that names a directory (or cannot be opened)
 * is an error naming it, not an empty read.  fopen() succeeds on a directory on Linux and the first
 * fread() then fails with EISDIR, which a reader that only counts bytes takes for an empty file. */
#ifndef DKV_UTIL_FILE_H
#define DKV_UTIL_FILE_H

#include <stdio.h>

#include "util/status.h"

/* Opens path for reading ("rb").  On failure returns NULL with err set: DKV_ENOENT "PATH: cannot open:
 * <reason>", or DKV_EINVAL "PATH: is a directory, not a file".  Pipes and devices are accepted (a script
 * may come from a process substitution). */
FILE *dkv_fopen_input(const char *path, dkv_err *err);

#endif
