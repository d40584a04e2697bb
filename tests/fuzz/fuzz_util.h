/* fuzz_util.h - shared by the libFuzzer harnesses of tests/fuzz (docs/RELIABILITY.md, "Fuzzing").
 *
 * dkv's readers take a path, so a harness writes the fuzzer's bytes to a scratch file and calls the
 * reader the CLI calls.  The file lives in /dev/shm when it exists (no disk traffic), else in
 * $TMPDIR or /tmp, is named after the process id and is removed at exit. */
#ifndef DKV_FUZZ_UTIL_H
#define DKV_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_MAX_FILES 4

static char fuzz_paths[FUZZ_MAX_FILES][256];

static inline void fuzz_cleanup(void)
{
    for (int i = 0; i < FUZZ_MAX_FILES; i++)
        if (fuzz_paths[i][0])
            unlink(fuzz_paths[i]);
}

/* The scratch path number `slot` (0..FUZZ_MAX_FILES-1), ending in `suffix` (".csv", ".jsonl", ...). */
static inline const char *fuzz_path(int slot, const char *suffix)
{
    static int registered;
    if (!registered) {
        atexit(fuzz_cleanup);
        registered = 1;
    }
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(fuzz_paths[slot], sizeof fuzz_paths[slot], "%s/dkv-fuzz-%ld-%d%s", dir, (long)getpid(), slot, suffix);
    return fuzz_paths[slot];
}

/* Writes data to scratch file `slot` and returns its path; aborts if the write fails (a harness
 * that silently tested nothing would be worse than one that stops). */
static inline const char *fuzz_file(int slot, const char *suffix, const uint8_t *data, size_t size)
{
    const char *p = fuzz_path(slot, suffix);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        perror(p);
        abort();
    }
    return p;
}

#endif
