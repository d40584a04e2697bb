/* names.c - an enum's one table of names (names.h). */
#include "util/names.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

const char *dkv_names_at(const dkv_names *t, int v)
{
    if (v < 0 || v >= t->n)
        return "?";
    const char *s = *(const char *const *)((const char *)t->base + (size_t)v * t->stride);
    return s ? s : "?";
}

int dkv_names_find(const dkv_names *t, const char *s)
{
    if (!s)
        return -1;
    for (int i = 0; i < t->n; i++) {
        const char *n = dkv_names_at(t, i);
        if (t->nocase ? strcasecmp(s, n) == 0 : strcmp(s, n) == 0)
            return i;
    }
    return -1;
}

void dkv_names_join(const dkv_names *t, char *buf, size_t size)
{
    size_t k = 0;
    if (size)
        buf[0] = 0;
    for (int i = 0; i < t->n && k < size; i++) {
        const char *sep = i == 0 ? "" : i + 1 == t->n ? " or " : ", ";
        int w = snprintf(buf + k, size - k, "%s%s", sep, dkv_names_at(t, i));
        if (w < 0)
            break;
        k += (size_t)w;
    }
}

dkv_status dkv_names_parse(const dkv_names *t, const char *s, int *out, dkv_err *err)
{
    int v = dkv_names_find(t, s);
    if (v >= 0) {
        *out = v;
        return DKV_OK;
    }
    char list[256];
    dkv_names_join(t, list, sizeof list);
    return dkv_err_set(err, DKV_EINVAL, "%s: unknown value '%s' (expected %s)", t->field, s ? s : "(null)", list);
}
