/* policy_desc.h - what the engine and the Lua layer need to know of a policy, as data: its name
 * (the key under dkv.simulate's `policies`), its config's default and validation, and its Lua keys
 * (type, field, range, enum names, and the enum value under which a key takes effect).  A policy
 * file defines one with DKV_POLICY_DEFINE; core/engine/engine_policy.c's table registers it
 * (docs/ARCHITECTURE.md, "Adding a ... policy").  Pure data: no Lua here, core/lua reads the keys. */
#ifndef DKV_POLICY_POLICY_DESC_H
#define DKV_POLICY_POLICY_DESC_H

#include <stddef.h>
#include <stdint.h>

#include "util/names.h"
#include "util/status.h"

typedef enum dkv_policy_key_type {
    DKV_POLICY_KEY_BOOL,   /* bool */
    DKV_POLICY_KEY_UINT,   /* uint32_t in [lo, hi] */
    DKV_POLICY_KEY_NUM,    /* double in [lo, hi] (flags: open ends) */
    DKV_POLICY_KEY_ENUM    /* an int-sized enum named by *names */
} dkv_policy_key_type;

enum { DKV_POLICY_KEY_LO_OPEN = 1, DKV_POLICY_KEY_HI_OPEN = 2 };
#define DKV_POLICY_MAX_KEYS 15

typedef struct dkv_policy_key {
    const char *name;               /* NULL ends a key list */
    dkv_policy_key_type type;
    size_t offset;                  /* of the field in the policy's config struct */
    double lo, hi;                  /* UINT and NUM: the accepted range */
    unsigned flags;                 /* NUM: DKV_POLICY_KEY_LO_OPEN / _HI_OPEN */
    const dkv_names *names;         /* ENUM: the names (util/names.h) */
    const char *used_if;            /* optional: an ENUM key of the same policy; this key takes effect
                                       only when that key's value is in used_mask (1 << value), and
                                       giving it otherwise is an error ("is not used when ...") */
    uint32_t used_mask;
} dkv_policy_key;

typedef struct dkv_policy {
    const char *name;               /* dkv.simulate's policies.<name> */
    size_t config_bytes;
    void (*set_default)(void *config);
    dkv_status (*validate)(const void *config, dkv_err *err);
    const dkv_policy_key *keys;     /* its Lua keys, parsed by core/lua from this list; NULL: core/lua
                                       has its own parser for it (the first policies, whose keys
                                       depend on the GPU preset or on each other) */
} dkv_policy;

/* Defines `const dkv_policy var` from PREFIX_config_default / PREFIX_config_validate over
 * CFG_TYPE (the signatures every policy has) and a key list (or NULL). */
#define DKV_POLICY_DEFINE(var, lua_name, prefix, cfg_type, key_list)                                    \
    static void var##_default_(void *c) { prefix##_config_default((cfg_type *)c); }                  \
    static dkv_status var##_validate_(const void *c, dkv_err *e)                                        \
    {                                                                                                   \
        return prefix##_config_validate((const cfg_type *)c, e);                                        \
    }                                                                                                   \
    const dkv_policy var = {lua_name, sizeof(cfg_type), var##_default_, var##_validate_, key_list}

#endif
