/* names.h - an enum's names, written down once.
 *
 * Each enum of dkv has ONE table of its names (index = value) in the module that owns the enum,
 * exported as a dkv_names: the C name function, the C parser, the Lua layer (dkv_lconf_enum_names,
 * core/lua/lconf.h) and the HDF5 text all read it, so a new value is one more table entry.
 * A table may be an array of strings or an array of structs whose first member is the name (a
 * table of operations, e.g. the schedulers): `stride` steps over the entries.
 *
 *     static const char *const cache_names[] = {"none", "prefix", "dual", "sparse"};
 *     const dkv_names dkv_cache_mode_names = DKV_NAMES("decode.cache", cache_names);
 *     const char *s = dkv_names_at(&dkv_cache_mode_names, m);          // "?" when out of range
 *     int v; dkv_names_parse(&dkv_cache_mode_names, "dual", &v, &err);  // names field and values
 */
#ifndef DKV_UTIL_NAMES_H
#define DKV_UTIL_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "util/status.h"

typedef struct dkv_names {
    const char *field;   /* what the value is, for messages: "decode.cache" */
    const void *base;    /* first entry: a const char * or a struct whose first member is one */
    size_t      stride;  /* bytes from one entry to the next */
    int         n;       /* entries */
    bool        nocase;  /* parse ignores case (trace format names) */
} dkv_names;

#define DKV_NAMES(field, arr) {(field), (arr), sizeof (arr)[0], (int)(sizeof(arr) / sizeof (arr)[0]), false}
#define DKV_NAMES_NOCASE(field, arr) {(field), (arr), sizeof (arr)[0], (int)(sizeof(arr) / sizeof (arr)[0]), true}

const char *dkv_names_at(const dkv_names *t, int v);            /* "?" when v is out of range */
int         dkv_names_find(const dkv_names *t, const char *s);  /* the value, or -1 */
/* "unknown <field> 'x' (expected a, b or c)" on a name not in the table (or NULL). */
dkv_status  dkv_names_parse(const dkv_names *t, const char *s, int *out, dkv_err *err);
/* The names joined as "a, b or c" into buf (truncated to size). */
void        dkv_names_join(const dkv_names *t, char *buf, size_t size);

#endif
