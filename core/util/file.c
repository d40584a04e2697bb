/* file.c - opening an input file, and the NUL check of a text read whole (file.h). */
#include "util/file.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

dkv_status dkv_fopen_input(const char *path, FILE **out, dkv_err *err)
{
    FILE *fp = *out = fopen(path, "rb");
    if (!fp)
        return dkv_err_set(err, DKV_ENOENT, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(fp);
        *out = NULL;
        return dkv_err_set(err, DKV_EINVAL, "%s: is a directory, not a file", path);
    }
    return DKV_OK;
}

dkv_status dkv_text_check_nul(const char *path, const char *text, size_t n, dkv_err *err)
{
    const char *nul = memchr(text, '\0', n);
    if (!nul)
        return DKV_OK;
    size_t off = (size_t)(nul - text), line = 1;
    for (size_t i = 0; i < off; i++)
        line += text[i] == '\n';
    return dkv_err_set(err, DKV_EFORMAT, "%s:%zu: a NUL byte at offset %zu: not a text file", path, line, off);
}
