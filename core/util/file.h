/* file.h - opening an input file, the one place: a path that names a directory (or cannot be opened)
 * is an error naming it, not an empty read.  fopen() succeeds on a directory on Linux and the first
 * fread() then fails with EISDIR, which a reader that only counts bytes takes for an empty file. */
#ifndef DKV_UTIL_FILE_H
#define DKV_UTIL_FILE_H

#include <stdio.h>

#include "util/status.h"

/* Opens path for reading ("rb") into *out.  On failure *out is NULL and the status says why, err set: DKV_ENOENT
 * "PATH: cannot open: <reason>", or DKV_EINVAL "PATH: is a directory, not a file".  Pipes and devices are accepted
 * (a script may come from a process substitution). */
dkv_status dkv_fopen_input(const char *path, FILE **out, dkv_err *err);

/* DKV_EFORMAT "PATH:LINE: a NUL byte at offset N: not a text file" when the n bytes of text read from path hold a
 * NUL (a reader that stops at one would silently drop the rest), else DKV_OK. */
dkv_status dkv_text_check_nul(const char *path, const char *text, size_t n, dkv_err *err);

#endif
