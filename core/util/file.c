/* file.c - opening an input file (file.h). */
#include "util/file.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

FILE *dkv_fopen_input(const char *path, dkv_err *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        dkv_err_set(err, DKV_ENOENT, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(fp);
        dkv_err_set(err, DKV_EINVAL, "%s: is a directory, not a file", path);
        return NULL;
    }
    return fp;
}
