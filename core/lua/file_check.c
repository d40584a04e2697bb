/* file_check.c - file arguments checked before they are trusted: a GPU preset file given by path
 * (dkv compare --calibration) must be text, load as a Lua data file and pass the preset checks. */
#include "lua/dkv_lua.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua/presets.h"
#include "util/file.h"

/* Reads the whole file (at most max bytes); refuses NUL bytes (binary data). */
static char *read_text(const char *path, size_t max, size_t *len, dkv_err *err)
{
    FILE *fp;
    if (dkv_fopen_input(path, &fp, err) != DKV_OK)
        return NULL;
    char *buf = malloc(max + 1);
    size_t n = buf ? fread(buf, 1, max + 1, fp) : 0;
    int bad = ferror(fp);
    fclose(fp);
    if (!buf || bad || n > max) {
        free(buf);
        dkv_err_set(err, buf ? DKV_EFORMAT : DKV_ENOMEM, "%s: %s", path,
                    !buf ? "out of memory" : bad ? "read error" : "too large for a preset file");
        return NULL;
    }
    buf[n] = '\0';
    if (dkv_text_check_nul(path, buf, n, err) != DKV_OK) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

typedef struct gpu_load {
    const char *path, *text;
    size_t len;
    dkv_gpu *out;
} gpu_load;

static int l_load_gpu(lua_State *L)
{
    gpu_load *g = lua_touserdata(L, 1);
    char chunk[4200];
    snprintf(chunk, sizeof chunk, "@%s", g->path);
    if (luaL_loadbufferx(L, g->text, g->len, chunk, "t") != LUA_OK)
        return lua_error(L);
    lua_newtable(L);   /* environment: math only, like a preset loaded by name */
    luaL_requiref(L, LUA_MATHLIBNAME, luaopen_math, 0);
    lua_setfield(L, -2, "math");
    lua_setupvalue(L, -2, 1);
    lua_call(L, 0, 1);
    if (!lua_istable(L, -1))
        return luaL_error(L, "%s: a preset file must return a table (got %s)", g->path, luaL_typename(L, -1));
    dkv_lua_check_gpu_at(L, -1, g->path, g->out);
    return 0;
}

dkv_status dkv_lua_check_gpu_file(dkv_lua *s, const char *path, dkv_gpu *out, dkv_err *err)
{
    size_t len;
    char *text = read_text(path, 64u << 20, &len, err);
    if (!text)
        return err ? err->code : DKV_EFORMAT;
    lua_State *L = dkv_lua_state(s);
    dkv_gpu tmp;
    gpu_load g = {path, text, len, out ? out : &tmp};
    lua_pushcfunction(L, l_load_gpu);
    lua_pushlightuserdata(L, &g);
    dkv_status st = DKV_OK;
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
        const char *m = lua_tostring(L, -1);
        st = dkv_err_set(err, DKV_EFORMAT, "%s", m ? m : "not a GPU preset");
        lua_pop(L, 1);
    }
    free(text);
    return st;
}
