/* dkv_lua_output.c - the sandbox's output file and the provenance every run carries
 * (dkv_lua_output, dkv_lua_run_begin/end), and the accessors the bindings use. */
#include "dkv_commit.h"
#include "lua/dkv_lua_impl.h"

#include <errno.h>
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int mkdirs_for(const char *file)
{
    char *p = file ? strdup(file) : NULL;
    if (!p)
        return -1;
    for (char *q = p + 1; *q; q++)
        if (*q == '/') {
            *q = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                free(p);
                return -1;
            }
            *q = '/';
        }
    free(p);
    return 0;
}

dkv_h5 *dkv_lua_output(lua_State *L)
{
    dkv_lua *s = dkv_lua_from_state(L);
    if (!s || !s->output_path)
        return NULL;
    if (!s->out) {
        dkv_err err = {0};
        mkdirs_for(s->output_path);
        if (dkv_h5_create(s->output_path, &s->out, &err) != DKV_OK)
            luaL_error(L, "output: %s", err.msg);
    }
    return s->out;
}

static void iso_now(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

#define CHECK(call)                                         \
    do {                                                    \
        if ((call) != DKV_OK)                               \
            luaL_error(L, "writing run '%s': %s", name, err.msg); \
    } while (0)

dkv_h5_run *dkv_lua_run_begin(lua_State *L, const char *name, int cfg_idx, uint64_t seed)
{
    dkv_lua *s = dkv_lua_from_state(L);
    if (cfg_idx)
        cfg_idx = lua_absindex(L, cfg_idx);
    dkv_h5 *f = dkv_lua_output(L);
    if (!f)
        return NULL;
    dkv_err err = {0};
    dkv_h5_run *run;
    dkv_h5_run *stale = dkv_h5_current_run(f);
    if (stale) {  /* a binding raised between begin and end: close that run as failed */
        dkv_h5_attr_str(stale, NULL, "status", "failed", NULL);
        dkv_h5_run_end(stale, NULL);
    }
    if (dkv_h5_run_begin(f, name, &run, &err) != DKV_OK)
        luaL_error(L, "%s", err.msg);
    char host[256] = "unknown", now[32], shard[32];
    gethostname(host, sizeof host - 1);
    iso_now(now, sizeof now);
    snprintf(shard, sizeof shard, "%u/%u", s->shard_index, s->shard_count);
    CHECK(dkv_h5_attr_str(run, NULL, "status", "incomplete", &err));
    CHECK(dkv_h5_attr_str(run, NULL, "dkv_version", DKV_VERSION, &err));
    CHECK(dkv_h5_attr_str(run, NULL, "git_commit", DKV_GIT_COMMIT, &err));
    CHECK(dkv_h5_attr_str(run, NULL, "script_path", s->script_path ? s->script_path : "", &err));
    CHECK(dkv_h5_attr_str(run, NULL, "script", s->script_text ? s->script_text : "", &err));
    CHECK(dkv_h5_attr_str(run, NULL, "host", host, &err));
    CHECK(dkv_h5_attr_str(run, NULL, "start_time", now, &err));
    CHECK(dkv_h5_attr_str(run, NULL, "shard", shard, &err));
    CHECK(dkv_h5_attr_i64(run, NULL, "seed", (int64_t)seed, &err));
    /* -D values, as given on the command line */
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (size_t i = 0; i < s->nparams; i++) {
        if (i)
            luaL_addchar(&b, '\n');
        luaL_addstring(&b, s->params[i]);
    }
    luaL_pushresult(&b);
    CHECK(dkv_h5_attr_str(run, NULL, "defines", lua_tostring(L, -1), &err));
    lua_pop(L, 1);
    if (cfg_idx)
        dkv_lua_push_literal(L, cfg_idx);
    else
        lua_pushliteral(L, "{}");
    CHECK(dkv_h5_attr_str(run, NULL, "config", lua_tostring(L, -1), &err));
    lua_pop(L, 1);
    if (cfg_idx)
        dkv_lua_write_flat(L, run, "config", cfg_idx);
    CHECK(dkv_h5_attr_str(run, NULL, "build", DKV_BUILD_MODE, &err));
    dkv_lua_run_origin(L, run, &(dkv_run_origin){"none", "", "", "", "", "", ""});
    return run;
}

void dkv_lua_run_end(lua_State *L, dkv_h5_run *run)
{
    if (!run)
        return;
    dkv_lua *s = dkv_lua_from_state(L);
    dkv_err err = {0};
    char now[32];
    const char *name = dkv_h5_run_name(run);
    iso_now(now, sizeof now);
    CHECK(dkv_h5_attr_str(run, NULL, "end_time", now, &err));
    CHECK(dkv_h5_attr_str(run, NULL, "status", "complete", &err));
    if (dkv_h5_run_end(run, &err) != DKV_OK)
        luaL_error(L, "%s", err.msg);
    if (s)
        s->runs_written++;
}

void dkv_lua_progress(lua_State *L, const char *label, double done, double total)
{
    dkv_lua *s = dkv_lua_from_state(L);
    if (s && s->progress)
        s->progress(s->progress_ud, label, done, total);
}

/* Accessors used by l_dkv.c */
size_t dkv_lua__params(lua_State *L, const char *const **out);
size_t dkv_lua__params(lua_State *L, const char *const **out)
{
    dkv_lua *s = dkv_lua_from_state(L);
    *out = s ? (const char *const *)s->params : NULL;
    return s ? s->nparams : 0;
}

void dkv_lua__shard(lua_State *L, uint32_t *index, uint32_t *count);
void dkv_lua__shard(lua_State *L, uint32_t *index, uint32_t *count)
{
    dkv_lua *s = dkv_lua_from_state(L);
    *index = s ? s->shard_index : 0;
    *count = s ? s->shard_count : 1;
}

