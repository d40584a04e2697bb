/* lconf.h - turning a Lua configuration table into C values, with errors that name the field.
 *
 * Every Lua binding that takes a config table uses these.  They raise Lua errors (luaL_error,
 * so the message starts with the script's file:line when called from a C function the script
 * called) of the form
 *
 *     exp.lua:12: cfg.workload.rate: must be > 0 (got -1)
 *     exp.lua:12: cfg.workload: unknown field 'rat' (did you mean 'rate'?)
 *
 * `path` is the name of the table being read ("cfg.workload"); `t` is its stack index (absolute
 * or relative; it is made absolute internally).  Strings returned are borrowed from the Lua
 * table and stay valid while that table is reachable.
 *
 *     static const char *const keys[] = {"rate", "n", "kind", NULL};
 *     dkv_lconf_check_keys(L, 1, "cfg.workload", keys);
 *     double rate = dkv_lconf_number(L, 1, "cfg.workload", "rate", 1.0, 0, HUGE_VAL,
 *                                    DKV_LCONF_LO_OPEN);
 *     int64_t n = dkv_lconf_integer(L, 1, "cfg.workload", "n", 100, 1, 1000000, 0);
 */
#ifndef DKV_LUA_LCONF_H
#define DKV_LUA_LCONF_H

#include <lua.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/names.h"

enum {
    DKV_LCONF_REQUIRED = 1, /* missing (nil) field is an error instead of taking the default */
    DKV_LCONF_LO_OPEN = 2,  /* value must be > lo (default: >= lo) */
    DKV_LCONF_HI_OPEN = 4   /* value must be < hi (default: <= hi) */
};

/* Raises "path.key: <message>" (key may be NULL: "path: <message>"), with the caller's position. */
int dkv_lconf_error(lua_State *L, const char *path, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Checks that t is a table whose string keys are all in `allowed` (NULL-terminated); raises
 * "path: unknown field 'x' (did you mean 'y'?)" for the first unknown key in sorted order, and
 * "path: field keys must be strings" for any non-string key.  Integer keys are allowed when
 * allow_array is true (an array part). */
void dkv_lconf_check_keys(lua_State *L, int t, const char *path, const char *const *allowed);
void dkv_lconf_check_keys_array(lua_State *L, int t, const char *path, const char *const *allowed,
                                bool allow_array);

/* Raises "path: expected a table, got <type>" unless the value at t is a table. */
void dkv_lconf_check_table(lua_State *L, int t, const char *path);

/* Numeric fields: default `def` when nil (unless DKV_LCONF_REQUIRED); range [lo, hi] with open
 * ends per flags (pass -HUGE_VAL / HUGE_VAL for none).  NaN and +-inf (math.huge) are always
 * rejected ("must be finite (got inf)"): -HUGE_VAL / HUGE_VAL mean no bound, not that inf is a value. */
double  dkv_lconf_number(lua_State *L, int t, const char *path, const char *key, double def, double lo,
                         double hi, unsigned flags);
/* The most seconds a configuration may give one event (a kernel launch, a cudaMalloc or cudaFree, a step's host
 * work, a hand-over, a routing set-up): an hour.  Real ones take microseconds to milliseconds; more is a unit
 * mistake, and a time near DBL_MAX overflows to inf once the model adds it up (NaN results, a stalled run). */
#define DKV_LCONF_EVENT_S_MAX 3600.0

/* Integers accept floats with an exact integer value (2.0) and reject 2.5. */
int64_t dkv_lconf_integer(lua_State *L, int t, const char *path, const char *key, int64_t def,
                          int64_t lo, int64_t hi, unsigned flags);
const char *dkv_lconf_string(lua_State *L, int t, const char *path, const char *key, const char *def,
                             unsigned flags);
bool    dkv_lconf_boolean(lua_State *L, int t, const char *path, const char *key, bool def, unsigned flags);
/* A string that must be one of names (NULL-terminated); returns its index, or def when nil.
 * Error: "path.key: unknown value 'x' (expected one of: a, b, c; did you mean 'b'?)". */
int     dkv_lconf_enum(lua_State *L, int t, const char *path, const char *key, const char *const *names,
                       int def, unsigned flags);
/* The same for an enum's one table of names (util/names.h): the Lua layer accepts exactly the
 * names the C layer prints. */
int     dkv_lconf_enum_names(lua_State *L, int t, const char *path, const char *key, const dkv_names *names,
                             int def, unsigned flags);

/* Pushes field key of t when it is a table and returns true; pushes nothing and returns false
 * when it is nil (error when REQUIRED); raises when it is another type. */
bool dkv_lconf_subtable(lua_State *L, int t, const char *path, const char *key, unsigned flags);

/* Writes "path.key" into buf (truncating) and returns buf: for the path of a sub-table. */
char *dkv_lconf_path(char *buf, size_t size, const char *path, const char *key);

/* Levenshtein distance between a and b (for suggestions). */
size_t dkv_lconf_edit_distance(const char *a, const char *b);

/* The entry of candidates (NULL-terminated) nearest to name, or NULL when none is close
 * (distance > max(2, strlen(name)/3) and neither is a prefix of the other). */
const char *dkv_lconf_nearest(const char *name, const char *const *candidates);

#endif
