/* dkv_lua.c - the sandbox: allocator cap, count hook, restricted libraries, require, running
 * scripts with a traceback, and the output file / provenance shared by the bindings. */
#include "dkv_commit.h"
#include "lua/dkv_lua.h"

#include <stdarg.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lua/lua_modules.h"
#include "util/interrupt.h"

#include "lua/dkv_lua_impl.h"
#include "util/file.h"

static char *xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* ------------------------------------------------------------------ allocator and hook */

static void *l_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    dkv_lua *s = ud;
    if (!ptr)
        osize = 0;
    if (nsize == 0) {
        free(ptr);
        s->mem_used -= osize;
        return NULL;
    }
    if (nsize > osize && s->mem_limit && s->mem_used + (nsize - osize) > s->mem_limit) {
        /* Over the cap: the count hook raises a normal error (with file:line) soon.  Past the
         * slack above the cap, refuse outright (Lua raises "not enough memory"). */
        size_t slack = s->mem_limit / 4 > (8u << 20) ? s->mem_limit / 4 : (8u << 20);
        if (s->stop == STOP_NONE)
            s->stop = STOP_MEM;
        if (s->mem_used + (nsize - osize) > s->mem_limit + slack) {
            /* refused: Lua raises a memory error without calling the message handler, so note
             * where the script is now (reads the call info only; nothing is allocated) */
            lua_Debug ar;
            if (s->L && lua_getstack(s->L, 0, &ar) && lua_getinfo(s->L, "Sl", &ar) && ar.currentline > 0)
                snprintf(s->where, sizeof s->where, "%s:%d", ar.short_src, ar.currentline);
            return NULL;
        }
    }
    void *p = realloc(ptr, nsize);
    if (p)
        s->mem_used = s->mem_used - osize + nsize;
    return p;
}

/* The time limit's clock: the CPU time of the thread running Lua, so a loaded machine (CI, a
 * shared node) does not stop a script that would finish on an idle one. */
static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds the script has run Lua (wall clock), without the time inside dkv's long calls. */
static double lua_seconds(const dkv_lua *s, double now)
{
    double c = s->c_time + (s->c_depth > 0 ? now - s->c_t0 : 0);
    return now - s->t_start - c;
}

int dkv_lua_timed(lua_State *L, lua_CFunction f)
{
    dkv_lua *s = dkv_lua_from_state(L);
    if (!s)
        return f(L);
    if (s->c_depth++ == 0)
        s->c_t0 = mono_now();
    int n = f(L);
    if (--s->c_depth == 0)
        s->c_time += mono_now() - s->c_t0;
    return n;
}

/* After an error escaped from inside dkv_lua_timed calls: close them down to depth `to`. */
static void timed_unwind(dkv_lua *s, int to)
{
    if (s->c_depth > to) {
        if (to == 0)
            s->c_time += mono_now() - s->c_t0;
        s->c_depth = to;
    }
}

/* Raises the error of a stop (SIGINT, instruction or time limit) at the file:line of stack level
 * `level` (0: the running Lua function; 1: the caller of a C function). */
static void raise_stop(lua_State *L, const dkv_lua *s, int level)
{
    luaL_where(L, level);
    if (s->stop == STOP_INTR)
        lua_pushfstring(L, "interrupted (%s)", dkv_interrupt_signal_name());
    else if (s->stop == STOP_TIME)
        lua_pushfstring(L, "time limit of %f s of Lua CPU time reached (raise it with --time-limit; time inside "
                           "dkv.simulate and other dkv calls does not count)",
                        s->time_limit_s);
    else
        lua_pushfstring(L, "instruction limit of %I reached (raise it with --instr-limit)",
                        (lua_Integer)s->instr_limit);
    lua_concat(L, 2);
    lua_error(L);
}

static void hook(lua_State *L, lua_Debug *ar)
{
    dkv_lua *s = dkv_lua_from_state(L);
    if (!s)
        return;
    s->instr_count += HOOK_EVERY;
    if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0)   /* remembered for memory errors */
        snprintf(s->where, sizeof s->where, "%s:%d", ar->short_src, ar->currentline);
    if (dkv_interrupt_requested() && (s->stop == STOP_NONE || s->stop == STOP_INTR))
        s->stop = STOP_INTR;
    else if (s->instr_limit && s->instr_count > s->instr_limit && s->stop != STOP_INTR)
        s->stop = STOP_INSTR;
    else if (s->time_limit_s > 0 && s->stop == STOP_NONE && lua_seconds(s, mono_now()) > s->time_limit_s)
        s->stop = STOP_TIME;
    if (s->stop == STOP_MEM) {
        lua_gc(L, LUA_GCCOLLECT);
        /* a full collection that leaves most of the cap in use: the script keeps what it allocates
         * (a runaway); collecting again and again at the cap would only slow it down */
        if (s->mem_used <= s->mem_limit / 4 * 3) {
            s->stop = STOP_NONE;
            return;
        }
        luaL_where(L, 0);
        lua_pushfstring(L, "memory limit of %d MiB reached (raise it with --mem-limit)", (int)(s->mem_limit >> 20));
        lua_concat(L, 2);
        lua_error(L);
    }
    if (s->stop == STOP_INTR || s->stop == STOP_INSTR || s->stop == STOP_TIME)
        raise_stop(L, s, 0);
}

static const char STATE_KEY = 'S';

dkv_lua *dkv_lua_from_state(lua_State *L)
{
    if (!L)
        return NULL;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &STATE_KEY);
    dkv_lua *s = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return s;
}

const char *dkv_lua_root(lua_State *L)
{
    dkv_lua *s = dkv_lua_from_state(L);
    return s && s->root ? s->root : ".";
}

const char *dkv_lua_data_path(lua_State *L, const char *file, char *buf, size_t n)
{
    if (file[0] == '/' || access(file, R_OK) == 0)
        return file;
    int k = snprintf(buf, n, "%s/%s", dkv_lua_root(L), file);
    return k > 0 && (size_t)k < n && access(buf, R_OK) == 0 ? buf : file;
}

void dkv_lua_notice(lua_State *L, const char *fmt, ...)
{
    dkv_lua *s = dkv_lua_from_state(L);
    if (!s || !s->notice || s->list_params)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    s->notice(s->notice_ud, msg);
}

void dkv_lua__stop_usage(lua_State *L)
{
    dkv_lua *s = dkv_lua_from_state(L);
    if (s)
        s->stop = STOP_USAGE;
}

void dkv_lua__stop_listed(lua_State *L)
{
    dkv_lua *s = dkv_lua_from_state(L);
    if (s)
        s->stop = STOP_LISTED;
}

int dkv_lua__listing(lua_State *L)
{
    dkv_lua *s = dkv_lua_from_state(L);
    return s && s->list_params;
}

const char *dkv_lua__script_name(lua_State *L)
{
    dkv_lua *s = dkv_lua_from_state(L);
    const char *p = s && s->script_path ? s->script_path : "this script";
    return (*p == '=' || *p == '@') ? p + 1 : p;   /* a chunk name */
}

static int l_print_off(lua_State *L)
{
    (void)L;
    return 0;
}

/* print that first checks the -D names: scripts declare their parameters at the top, so a typo
 * stops the script before it prints anything. */
static int l_print_checked(lua_State *L)
{
    dkv_lua_param_gate(L);
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, 0);
    return 0;
}

/* ------------------------------------------------------------------ restricted base library */

/* load(chunk [, chunkname [, mode [, env]]]) with mode forced to "t" (no binary chunks). */
static int l_load(lua_State *L)
{
    int n = lua_gettop(L);
    if (n < 3)
        lua_settop(L, 3);
    lua_pushliteral(L, "t");
    lua_replace(L, 3);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* pcall / xpcall that do not swallow a stop (instruction limit, memory cap, SIGINT): once the
 * script has been stopped, a caught error is raised again, so a pcall loop cannot outlive it. */
static int l_pcall_guard(lua_State *L)
{
    int n = lua_gettop(L);
    dkv_lua *s = dkv_lua_from_state(L);
    int depth = s ? s->c_depth : 0;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    if (s)
        timed_unwind(s, depth);
    if (s && s->stop != STOP_NONE && !lua_toboolean(L, 1)) {
        lua_settop(L, 2);
        return lua_error(L);
    }
    return lua_gettop(L);
}

/* print(...): the progress bars are cleared first (the callback gets label NULL), so output
 * and bars do not overwrite each other on a terminal. */
static int l_print_guard(lua_State *L)
{
    dkv_lua *s = dkv_lua_from_state(L);
    if (s && s->progress)
        s->progress(s->progress_ud, NULL, 0, 0);
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, 0);
    return 0;
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* require(name): "dkv", loaded libraries, or <dir>/<name>.lua (dots -> '/') for dir in the
 * script's folder, <root>/scripts, <root>/experiments. */
static int l_require(lua_State *L)
{
    dkv_lua *s = dkv_lua_from_state(L);
    const char *name = luaL_checkstring(L, 1);
    lua_settop(L, 1);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getfield(L, 2, name);
    if (lua_toboolean(L, -1))
        return 1;
    lua_pop(L, 1);
    size_t len = strlen(name);
    if (len == 0 || len > 200)
        return luaL_error(L, "module name '%s' is empty or too long", name);
    char rel[256];
    for (size_t i = 0; i <= len; i++) {
        char c = name[i];
        if (c && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                   c == '-' || c == '.'))
            return luaL_error(L, "module '%s': names may use A-Z a-z 0-9 _ - . only", name);
        rel[i] = c == '.' ? '/' : c;
    }
    if (strstr(name, ".."))
        return luaL_error(L, "module '%s': '..' is not allowed", name);
    const char *root = s && s->root ? s->root : ".";
    char dirs[3][4096], path[4400];
    snprintf(dirs[0], sizeof dirs[0], "%s", s && s->script_dir ? s->script_dir : ".");
    snprintf(dirs[1], sizeof dirs[1], "%s/scripts", root);
    snprintf(dirs[2], sizeof dirs[2], "%s/experiments", root);
    for (int i = 0; i < 3; i++) {
        if (snprintf(path, sizeof path, "%s/%s.lua", dirs[i], rel) >= (int)sizeof path || !file_exists(path))
            continue;
        if (luaL_loadfilex(L, path, "t") != LUA_OK)
            return lua_error(L);
        lua_pushstring(L, name);
        lua_pushstring(L, path);
        lua_call(L, 2, 1);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            lua_pushboolean(L, 1);
        }
        lua_pushvalue(L, -1);
        lua_setfield(L, 2, name);
        return 1;
    }
    return luaL_error(L, "module '%s' not found (looked for %s.lua in %s, %s, %s)", name, rel, dirs[0], dirs[1],
                      dirs[2]);
}

static int l_print(lua_State *L);

static void open_libs(lua_State *L)
{
    static const luaL_Reg libs[] = {{LUA_GNAME, luaopen_base},       {LUA_STRLIBNAME, luaopen_string},
                                    {LUA_TABLIBNAME, luaopen_table}, {LUA_MATHLIBNAME, luaopen_math},
                                    {LUA_UTF8LIBNAME, luaopen_utf8}, {NULL, NULL}};
    for (const luaL_Reg *l = libs; l->name; l++) {
        luaL_requiref(L, l->name, l->func, 1);
        lua_pop(L, 1);
    }
    lua_pushcfunction(L, l_print);
    lua_setglobal(L, "print");
    lua_pushnil(L);
    lua_setglobal(L, "dofile");
    lua_pushnil(L);
    lua_setglobal(L, "loadfile");
    lua_getglobal(L, "load");
    lua_pushcclosure(L, l_load, 1);
    lua_setglobal(L, "load");
    static const char *const catchers[] = {"pcall", "xpcall", NULL};
    for (int i = 0; catchers[i]; i++) {
        lua_getglobal(L, catchers[i]);
        lua_pushcclosure(L, l_pcall_guard, 1);
        lua_setglobal(L, catchers[i]);
    }
    lua_getglobal(L, "print");
    lua_pushcclosure(L, l_print_guard, 1);
    lua_setglobal(L, "print");
    lua_pushcfunction(L, l_require);
    lua_setglobal(L, "require");
    /* os: clock, time, date, difftime only (taken from the real library, which is then dropped) */
    luaopen_os(L);
    lua_newtable(L);
    static const char *const keep[] = {"clock", "time", "date", "difftime", NULL};
    for (int i = 0; keep[i]; i++) {
        lua_getfield(L, -2, keep[i]);
        lua_setfield(L, -2, keep[i]);
    }
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, LUA_OSLIBNAME);
    lua_pop(L, 1);
    lua_setglobal(L, "os");
    lua_pop(L, 1);
    luaL_requiref(L, "dkv", luaopen_dkv, 0);
    lua_pop(L, 1);
}

/* ------------------------------------------------------------------ lifecycle */

dkv_lua_config dkv_lua_config_default(void)
{
    dkv_lua_config c;
    memset(&c, 0, sizeof c);
    c.root = ".";
    c.shard_count = 1;
    c.instr_limit = DKV_LUA_DEFAULT_INSTR_LIMIT;
    c.mem_limit_bytes = DKV_LUA_DEFAULT_MEM_LIMIT;
    c.time_limit_s = DKV_LUA_DEFAULT_TIME_LIMIT_S;
    return c;
}

static int l_open_all(lua_State *L)
{
    open_libs(L);
    return 0;
}

dkv_status dkv_lua_new(const dkv_lua_config *cfg, dkv_lua **out, dkv_err *err)
{
    *out = NULL;
    if (cfg->shard_count == 0 || cfg->shard_index >= cfg->shard_count)
        return dkv_err_set(err, DKV_EINVAL, "shard %u/%u: need 0 <= index < count", cfg->shard_index,
                           cfg->shard_count);
    dkv_lua *s = calloc(1, sizeof *s);
    if (!s)
        return dkv_err_set(err, DKV_ENOMEM, "out of memory");
    s->root = xstrdup(cfg->root ? cfg->root : ".");
    s->output_path = xstrdup(cfg->output_path);
    s->shard_index = cfg->shard_index;
    s->shard_count = cfg->shard_count;
    s->instr_limit = cfg->instr_limit;
    s->mem_limit = cfg->mem_limit_bytes;
    s->progress = cfg->progress;
    s->progress_ud = cfg->progress_ud;
    s->list_params = cfg->list_params;
    s->notice = cfg->notice;
    s->notice_ud = cfg->notice_ud;
    s->time_limit_s = cfg->time_limit_s;
    s->t_start = mono_now();   /* also for Lua run outside a script (preset and profile files) */
    s->params = calloc(cfg->nparams ? cfg->nparams : 1, sizeof *s->params);
    for (size_t i = 0; s->params && i < cfg->nparams; i++)
        s->params[s->nparams++] = xstrdup(cfg->params[i]);
    s->L = lua_newstate(l_alloc, s);
    if (!s->root || !s->params || !s->L) {
        dkv_lua_close(s, NULL);
        return dkv_err_set(err, DKV_ENOMEM, "cannot create the Lua state");
    }
    lua_pushlightuserdata(s->L, s);
    lua_rawsetp(s->L, LUA_REGISTRYINDEX, &STATE_KEY);
    lua_pushcfunction(s->L, l_open_all);
    if (lua_pcall(s->L, 0, 0, 0) != LUA_OK) {
        dkv_err_set(err, DKV_EINVAL, "setting up the Lua sandbox: %s", lua_tostring(s->L, -1));
        dkv_lua_close(s, NULL);
        return err ? err->code : DKV_EINVAL;
    }
    if (s->list_params) {
        lua_pushcfunction(s->L, l_print_off);
        lua_setglobal(s->L, "print");
    } else {
        lua_getglobal(s->L, "print");
        lua_pushcclosure(s->L, l_print_checked, 1);
        lua_setglobal(s->L, "print");
    }
    lua_sethook(s->L, hook, LUA_MASKCOUNT, HOOK_EVERY);
    *out = s;
    return DKV_OK;
}

dkv_status dkv_lua_close(dkv_lua *s, dkv_err *err)
{
    if (!s)
        return DKV_OK;
    if (s->L)
        lua_close(s->L);   /* first: __gc of bindings may still write */
    dkv_status st = dkv_h5_close(s->out, err);
    for (size_t i = 0; i < s->nparams; i++)
        free(s->params[i]);
    free(s->params);
    free(s->root);
    free(s->output_path);
    free(s->traceback);
    free(s->script_path);
    free(s->script_text);
    free(s->script_dir);
    free(s);
    return st;
}

dkv_h5 *dkv_lua_take_output(dkv_lua *s)
{
    if (!s)
        return NULL;
    if (s->L)
        lua_close(s->L);
    s->L = NULL;
    dkv_h5 *f = s->out;
    s->out = NULL;
    return f;
}

lua_State *dkv_lua_state(dkv_lua *s)
{
    return s ? s->L : NULL;
}

const char *dkv_lua_output_path(const dkv_lua *s)
{
    return s ? s->output_path : NULL;
}

size_t dkv_lua_runs_written(const dkv_lua *s)
{
    return s ? s->runs_written : 0;
}

bool dkv_lua_usage_error(const dkv_lua *s)
{
    return s && s->usage_error;
}

char *dkv_lua_params_help(dkv_lua *s)
{
    return s && s->L ? dkv_lua_param_listing(s->L) : NULL;
}

const char *dkv_lua_traceback(const dkv_lua *s)
{
    return s && s->traceback ? s->traceback : "";
}

/* ------------------------------------------------------------------ running */

/* Pushes s cut to max bytes with a note of how much was left out. */
static const char *push_cut(lua_State *L, const char *s, size_t len, size_t max, const char *what)
{
    lua_pushlstring(L, s, max);
    lua_pushfstring(L, "... [%I more bytes of %s cut]", (lua_Integer)(len - max), what);
    lua_concat(L, 2);
    return lua_tostring(L, -1);
}

static int msgh(lua_State *L)
{
    size_t len = 0;
    const char *msg = lua_tolstring(L, 1, &len);
    if (!msg) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            msg = lua_tolstring(L, -1, &len);
        else
            msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    if (msg && len > DKV_LUA_ERRMSG_MAX)   /* a 1 GiB error message is not printed whole */
        msg = push_cut(L, msg, len, DKV_LUA_ERRMSG_MAX, "the error message");
    luaL_traceback(L, L, msg, 1);
    return 1;
}

/* print(...) as Lua's, except that text from a __tostring metamethod is cut at
 * DKV_LUA_TOSTRING_MAX bytes (a __tostring returning 1 GiB is not printed whole).  Strings and
 * numbers print as given. */
static int l_print(lua_State *L)
{
    int n = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
        int meta = luaL_getmetafield(L, i, "__tostring") != LUA_TNIL;
        if (meta)
            lua_pop(L, 1);
        size_t len;
        const char *s = luaL_tolstring(L, i, &len);
        if (meta && len > DKV_LUA_TOSTRING_MAX)
            s = push_cut(L, s, len, DKV_LUA_TOSTRING_MAX, "__tostring output"), len = strlen(s);
        if (i > 1)
            fputc('\t', stdout);
        fwrite(s, 1, len, stdout);
        lua_settop(L, n);
    }
    fputc('\n', stdout);
    fflush(stdout);
    return 0;
}

static dkv_status finish(dkv_lua *s, int rc, dkv_err *err)
{
    timed_unwind(s, 0);
    free(s->traceback);
    s->traceback = NULL;
    s->usage_error = false;
    if (rc != LUA_OK && s->stop == STOP_LISTED) {   /* --help: the script stopped where work starts */
        lua_pop(s->L, 1);
        s->stop = STOP_NONE;
        return DKV_OK;
    }
    if (rc == LUA_OK)
        return DKV_OK;
    if (s->stop == STOP_USAGE) {   /* a plain message, no traceback: the command line is wrong */
        const char *m = lua_tostring(s->L, -1);
        size_t mlen = m ? strlen(m) : 0;
        s->traceback = malloc(4 * mlen + 16);
        if (s->traceback)
            dkv_text_escape(s->traceback, 4 * mlen + 16, m ? m : "usage error");
        char *tb = s->traceback ? strstr(s->traceback, "\nstack traceback:") : NULL;
        if (tb)
            *tb = '\0';
        lua_pop(s->L, 1);
        s->stop = STOP_NONE;
        s->usage_error = true;
        return dkv_err_set(err, DKV_EINVAL, "%s", s->traceback ? s->traceback : "usage error");
    }
    const char *m = lua_tostring(s->L, -1);
    if (rc == LUA_ERRMEM) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s: memory limit of %zu MiB reached (raise it with --mem-limit)",
                 s->where[0] ? s->where : s->script_path ? s->script_path : "script", s->mem_limit >> 20);
        s->traceback = xstrdup(buf);
        lua_pop(s->L, 1);
        lua_gc(s->L, LUA_GCCOLLECT);
        s->stop = STOP_NONE;  /* memory is free again once the error unwound */
        return dkv_err_set(err, DKV_ENOMEM, "%s", buf);
    }
    size_t mlen = m ? strlen(m) : 0;
    s->traceback = malloc(4 * mlen + 16);   /* escaped: a script can echo binary input */
    if (s->traceback)
        dkv_text_escape(s->traceback, 4 * mlen + 16, m ? m : "(no message)");
    lua_pop(s->L, 1);
    char line[DKV_ERR_MSG_MAX];
    snprintf(line, sizeof line, "%s", s->traceback ? s->traceback : "");
    char *nl = strstr(line, "\nstack traceback:");
    if (nl)
        *nl = '\0';
    int stop = s->stop;
    if (s->stop == STOP_MEM) {
        lua_gc(s->L, LUA_GCCOLLECT);
        s->stop = STOP_NONE;
    }
    if (s->stop == STOP_TIME)
        s->stop = STOP_NONE;   /* the next script gets its own time */
    dkv_status code = rc == LUA_ERRSYNTAX ? DKV_EINVAL
                    : stop == STOP_MEM ? DKV_ENOMEM
                    : stop == STOP_INTR ? DKV_EINTR
                    : stop == STOP_INSTR || stop == STOP_TIME ? DKV_ERANGE
                                            : DKV_EFORMAT;
    return dkv_err_set(err, code, "%s", line);
}

void dkv_lua_mark_interrupted(lua_State *L)
{
    dkv_lua *s = dkv_lua_from_state(L);
    if (s)
        s->stop = STOP_INTR;
}

static dkv_status run_loaded(dkv_lua *s, int rc, dkv_err *err)
{
    lua_State *L = s->L;
    if (rc != LUA_OK)
        return finish(s, rc, err);
    lua_pushcfunction(L, msgh);
    lua_insert(L, -2);
    int base = lua_gettop(L) - 1;
    s->t_start = mono_now();   /* the time limit counts per script */
    s->c_time = 0;
    s->c_depth = 0;
    rc = lua_pcall(L, 0, 0, base);
    if (rc == LUA_OK && !s->list_params) {   /* -D names the script never looked at */
        lua_pushcfunction(L, dkv_lua_param_check_end);
        rc = lua_pcall(L, 0, 0, base);
    }
    if (rc == LUA_OK && (s->stop == STOP_INTR || dkv_interrupt_requested())) {
        /* interrupted where no hook raised it, or the script caught the error (pcall) and went on: still interrupted */
        s->stop = STOP_INTR;
        lua_pushfstring(L, "%s: interrupted (%s)", s->script_path ? s->script_path : "script",
                        dkv_interrupt_signal_name());
        rc = LUA_ERRRUN;
    }
    lua_remove(L, base);
    return finish(s, rc, err);
}

dkv_status dkv_lua_run_file(dkv_lua *s, const char *path, dkv_err *err)
{
    FILE *fp;
    dkv_status ost = dkv_fopen_input(path, &fp, err);
    if (ost != DKV_OK)
        return ost;
    size_t cap = 1 << 16, n = 0;
    char *text = malloc(cap);
    size_t k;
    while (text && (k = fread(text + n, 1, cap - n - 1, fp)) > 0) {
        n += k;
        if (n + 1 == cap) {
            char *t = realloc(text, cap *= 2);
            if (!t) {
                free(text);
                text = NULL;
            }
            text = t;
        }
    }
    int bad = ferror(fp);
    fclose(fp);
    if (!text)
        return dkv_err_set(err, DKV_ENOMEM, "%s: out of memory reading the script", path);
    if (bad) {
        free(text);
        return dkv_err_set(err, DKV_EIO, "%s: read error", path);
    }
    text[n] = '\0';
    dkv_status nst = dkv_text_check_nul(path, text, n, err);   /* the loader would stop at one: the rest unrun */
    if (nst != DKV_OK) {
        free(text);
        return nst;
    }
    free(s->script_text);
    free(s->script_path);
    free(s->script_dir);
    s->script_text = text;
    s->script_path = xstrdup(path);
    s->script_dir = xstrdup(path);
    char *slash = s->script_dir ? strrchr(s->script_dir, '/') : NULL;
    if (slash)
        *slash = '\0';
    else if (s->script_dir)
        strcpy(s->script_dir, ".");
    char chunk[4200];
    snprintf(chunk, sizeof chunk, "@%s", path);
    const char *body = text;
    if (body[0] == '#')   /* skip a #! line, keeping line numbers */
        while (*body && *body != '\n')
            body++;
    int rc = luaL_loadbufferx(s->L, body, strlen(body), chunk, "t");
    return run_loaded(s, rc, err);
}

dkv_status dkv_lua_run_string(dkv_lua *s, const char *chunkname, const char *code, dkv_err *err)
{
    if (!s->script_text) {
        s->script_text = xstrdup(code);
        s->script_path = xstrdup(chunkname);
    }
    int rc = luaL_loadbufferx(s->L, code, strlen(code), chunkname, "t");
    return run_loaded(s, rc, err);
}

/* Work a binding does in C on the script's behalf, over a size the script chose (a loop to a
 * __len): ops count as VM instructions against the instruction limit, its time against the time
 * limit, and SIGINT stops it, with the count hook's messages, at the caller's file:line. */
void dkv_lua__charge(lua_State *L, uint64_t ops);
void dkv_lua__charge(lua_State *L, uint64_t ops)
{
    dkv_lua *s = dkv_lua_from_state(L);
    if (!s)
        return;
    s->instr_count += ops;
    if (dkv_interrupt_requested() && (s->stop == STOP_NONE || s->stop == STOP_INTR))
        s->stop = STOP_INTR;
    else if (s->instr_limit && s->instr_count > s->instr_limit && s->stop != STOP_INTR)
        s->stop = STOP_INSTR;
    else if (s->time_limit_s > 0 && s->stop == STOP_NONE && lua_seconds(s, mono_now()) > s->time_limit_s)
        s->stop = STOP_TIME;   /* such a loop is Lua's time, not a dkv_lua_timed call */
    if (s->stop == STOP_INTR || s->stop == STOP_INSTR || s->stop == STOP_TIME)
        raise_stop(L, s, 1);
}
