/* test_lua.c - config readers (lconf), presets, the sandbox (libraries, require, limits,
 * interrupt, errors) and the run writer with provenance.  Runs from the project root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>

#include <lauxlib.h>
#include <lualib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/h5.h"
#include "lua/dkv_lua.h"
#include "lua/lconf.h"
#include "lua/presets.h"
#include "util/interrupt.h"
#include "test_tmpdir.h"

/* ------------------------------------------------------------------ lconf */

typedef void (*conf_fn)(lua_State *L);

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The preset names of datasets/presets/<kind>/ (files NAME.lua), sorted, joined by ','. */
static void preset_files(const char *kind, char *out, size_t size)
{
    char dir[128], *names[64];
    size_t n = 0;
    snprintf(dir, sizeof dir, "datasets/presets/%s", kind);
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL && n < 64;) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".lua") == 0)
            names[n++] = strndup(e->d_name, len - 4);
    }
    closedir(d);
    qsort(names, n, sizeof names[0], cmp_str);
    out[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (i)
            strncat(out, ",", size - strlen(out) - 1);
        strncat(out, names[i], size - strlen(out) - 1);
        free(names[i]);
    }
}

static int call_conf(lua_State *L)
{
    conf_fn fn = (conf_fn)(uintptr_t)lua_touserdata(L, lua_upvalueindex(1));
    fn(L);
    return 0;
}

/* Evaluates `src` (a Lua expression) into a table at index 1, runs fn on it in protected mode;
 * returns NULL on success or the error message (static buffer). */
static const char *conf(const char *src, conf_fn fn)
{
    static char msg[512];
    lua_State *L = luaL_newstate();
    char code[1024];
    snprintf(code, sizeof code, "return %s", src);
    assert_int_equal(luaL_loadstring(L, code), LUA_OK);
    assert_int_equal(lua_pcall(L, 0, 1, 0), LUA_OK);
    lua_pushlightuserdata(L, (void *)(uintptr_t)fn);
    lua_pushcclosure(L, call_conf, 1);
    lua_insert(L, 1);
    int rc = lua_pcall(L, 1, 0, 0);
    const char *r = NULL;
    if (rc != LUA_OK) {
        snprintf(msg, sizeof msg, "%s", lua_tostring(L, -1));
        r = msg;
    }
    lua_close(L);
    return r;
}

static const char *const WKEYS[] = {"rate", "n", "kind", "name", "on", "sub", NULL};
static const char *const KINDS[] = {"poisson", "gamma", "trace", NULL};
static double g_rate;
static int64_t g_n;
static int g_kind;
static const char *g_name_seen;
static bool g_on;

static void read_workload(lua_State *L)
{
    dkv_lconf_check_keys(L, 1, "cfg.workload", WKEYS);
    g_rate = dkv_lconf_number(L, 1, "cfg.workload", "rate", 1.0, 0, HUGE_VAL, DKV_LCONF_LO_OPEN);
    g_n = dkv_lconf_integer(L, 1, "cfg.workload", "n", 100, 1, 1000, 0);
    g_kind = dkv_lconf_enum(L, 1, "cfg.workload", "kind", KINDS, 0, 0);
    const char *s = dkv_lconf_string(L, 1, "cfg.workload", "name", "anon", 0);
    g_name_seen = strcmp(s, "anon") == 0 ? "anon" : "other";
    g_on = dkv_lconf_boolean(L, 1, "cfg.workload", "on", true, 0);
    if (dkv_lconf_subtable(L, 1, "cfg.workload", "sub", 0)) {
        dkv_lconf_number(L, -1, "cfg.workload.sub", "x", 0, 0, 1, DKV_LCONF_REQUIRED);
        lua_pop(L, 1);
    }
}

static void test_lconf_values_and_defaults(void **state)
{
    (void)state;
    assert_null(conf("{}", read_workload));
    assert_true(g_rate == 1.0 && g_n == 100 && g_kind == 0 && g_on);
    assert_string_equal(g_name_seen, "anon");
    assert_null(conf("{rate = 2.5, n = 7.0, kind = 'trace', name = 'x', on = false, sub = {x = 1}}", read_workload));
    assert_true(g_rate == 2.5 && g_n == 7 && g_kind == 2 && !g_on);
    assert_string_equal(g_name_seen, "other");
}

static void test_lconf_errors_name_the_field(void **state)
{
    (void)state;
    assert_string_equal(conf("{rate = -1}", read_workload), "cfg.workload.rate: must be > 0 (got -1)");
    assert_string_equal(conf("{rate = 0/0}", read_workload), "cfg.workload.rate: must be a number, got nan");
    /* HUGE_VAL as a bound means none: inf (math.huge) is still no value (an infinite rate or duration) */
    assert_string_equal(conf("{rate = 1/0}", read_workload), "cfg.workload.rate: must be finite (got inf)");
    assert_string_equal(conf("{rate = -1/0}", read_workload), "cfg.workload.rate: must be finite (got -inf)");
    assert_null(conf("{rate = 1e308}", read_workload));
    assert_string_equal(conf("{rate = 'fast'}", read_workload), "cfg.workload.rate: expected a number, got string");
    assert_string_equal(conf("{n = 2.5}", read_workload), "cfg.workload.n: expected an integer, got 2.5");
    assert_string_equal(conf("{n = 0}", read_workload), "cfg.workload.n: must be in [1, 1000] (got 0)");
    assert_string_equal(conf("{rat = 1}", read_workload), "cfg.workload: unknown field 'rat' (did you mean 'rate'?)");
    assert_string_equal(conf("{zzzzzzzz = 1}", read_workload),
                        "cfg.workload: unknown field 'zzzzzzzz' (known fields: rate, n, kind, name, on, sub)");
    assert_string_equal(conf("{[1] = 1}", read_workload), "cfg.workload: field keys must be strings (found a number key)");
    assert_string_equal(conf("{kind = 'gama'}", read_workload),
                        "cfg.workload.kind: unknown value 'gama' (expected one of: poisson, gamma, trace; did you mean 'gamma'?)");
    assert_string_equal(conf("{on = 1}", read_workload), "cfg.workload.on: expected a boolean, got number");
    assert_string_equal(conf("{sub = 3}", read_workload), "cfg.workload.sub: expected a table, got number");
    assert_string_equal(conf("{sub = {}}", read_workload), "cfg.workload.sub.x: required field is missing");
    assert_string_equal(conf("{sub = {x = 2}}", read_workload), "cfg.workload.sub.x: must be in [0, 1] (got 2)");
    assert_string_equal(conf("5", read_workload), "cfg.workload: expected a table, got number");
}

static void test_lconf_edit_distance(void **state)
{
    (void)state;
    assert_int_equal(dkv_lconf_edit_distance("", ""), 0);
    assert_int_equal(dkv_lconf_edit_distance("kitten", "sitting"), 3);
    assert_int_equal(dkv_lconf_edit_distance("rate", "rat"), 1);
    assert_int_equal(dkv_lconf_edit_distance("abc", ""), 3);
    static const char *const c[] = {"hbm_bytes", "hbm_bw", "flops_bf16", NULL};
    assert_string_equal(dkv_lconf_nearest("hbm_bww", c), "hbm_bw");
    assert_string_equal(dkv_lconf_nearest("flops_bf61", c), "flops_bf16");
    assert_null(dkv_lconf_nearest("completely_else", c));
    char buf[32];
    assert_string_equal(dkv_lconf_path(buf, sizeof buf, "cfg", "gpu"), "cfg.gpu");
    assert_string_equal(dkv_lconf_path(buf, sizeof buf, "", "gpu"), "gpu");
}

/* ------------------------------------------------------------------ sandbox */

static dkv_lua *sandbox(const char *out, uint64_t instr, size_t mem)
{
    dkv_lua_config cfg = dkv_lua_config_default();
    static const char *const params[] = {"n=3", "x=1.5", "flag=true", "off=false", "name=abc", "e=", "big=1e3"};
    cfg.params = params;
    cfg.nparams = 7;
    cfg.output_path = out;
    cfg.instr_limit = instr;
    cfg.mem_limit_bytes = mem;
    cfg.shard_index = 1;
    cfg.shard_count = 3;
    dkv_lua *s = NULL;
    dkv_err err = {0};
    assert_int_equal(dkv_lua_new(&cfg, &s, &err), DKV_OK);
    return s;
}

static dkv_status run(dkv_lua *s, const char *code, dkv_err *err)
{
    /* these tests read only some of the -D values of sandbox(): iterating dkv.params reads them
     * all (on the code's first line, keeping line numbers), so the check of unknown -D names
     * (tests/unit/test_lua_param.c) stays out of their way */
    static char buf[8192];
    snprintf(buf, sizeof buf, "for _ in pairs(require('dkv').params) do end %s", code);
    dkv_status st = dkv_lua_run_string(s, "=test", buf, err);
    if (st != DKV_OK)
        print_message("(lua) %s\n", err->msg);   /* shown when an assertion then fails */
    return st;
}

static void test_sandbox_libraries(void **state)
{
    (void)state;
    dkv_lua *s = sandbox(NULL, 0, 0);
    dkv_err err = {0};
    assert_int_equal(run(s, "assert(io == nil and dofile == nil and loadfile == nil and package == nil)\n"
                            "assert(debug == nil and os.execute == nil and os.remove == nil and os.getenv == nil)\n"
                            "assert(type(os.clock()) == 'number' and type(os.time()) == 'number')\n"
                            "assert(string.format('%d', 3) == '3' and math.pi and table.concat and utf8.char)\n"
                            "assert(load('return 1 + 1')() == 2)\n"
                            "local bin = string.dump(function() return 1 end)\n"
                            "local f, e = load(bin)\n"
                            "assert(f == nil and e:find('binary'), e)\n"
                            "local f2, e2 = load(bin, 'x', 'b')\n"
                            "assert(f2 == nil, 'mode b must be refused')\n"
                            "local env = {}\n"
                            "load('y = 5', 'c', 't', env)()\n"
                            "assert(env.y == 5 and y == nil)\n",
                     &err),
                     DKV_OK);
    assert_int_equal(run(s, "local dkv = require 'dkv'\n"
                            "assert(dkv == require('dkv'))\n"
                            "assert(require('string') == string)\n"
                            "assert(dkv.params.n == 3 and math.type(dkv.params.n) == 'integer')\n"
                            "assert(dkv.params.x == 1.5 and dkv.params.flag == true and dkv.params.off == false)\n"
                            "assert(dkv.params.name == 'abc' and dkv.params.e == '' and dkv.params.big == 1000)\n"
                            "assert(dkv.shard.index == 1 and dkv.shard.count == 3)\n"
                            "local mine = dkv.shard.select({'a','b','c','d','e'})\n"
                            "assert(#mine == 2 and mine[1] == 'b' and mine[2] == 'e')\n"
                            "assert(dkv.shard.mine(2) and not dkv.shard.mine(3))\n"
                            "assert(dkv.output == nil and type(dkv.version) == 'string')\n"
                            "assert(dkv.write_run('r', {summary = {x = 1}}) == false)\n",
                     &err),
                     DKV_OK);
    dkv_lua_close(s, NULL);
}

static void test_sandbox_require_paths(void **state)
{
    (void)state;
    char dir[] = "/tmp/dkv-test-lua.XXXXXX", path[128], mod[128];
    assert_non_null(mkdtemp(dir));
    snprintf(mod, sizeof mod, "%s/helper.lua", dir);
    FILE *fp = fopen(mod, "w");
    fputs("local M = {}\nfunction M.twice(x) return 2 * x end\nreturn M\n", fp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/main.lua", dir);
    fp = fopen(path, "w");
    fputs("for _ in pairs(require('dkv').params) do end\n"   /* reads every -D value of sandbox() */
          "local h = require 'helper'\nassert(h.twice(21) == 42)\nassert(require('helper') == h)\n"
          "local ok, e = pcall(require, '../etc/passwd')\nassert(not ok and e:find('not allowed') or e:find('only'), e)\n"
          "ok, e = pcall(require, 'no_such_module')\nassert(not ok and e:find('not found'), e)\n"
          "ok, e = pcall(require, 'os')\nassert(ok)\n",
          fp);
    fclose(fp);
    dkv_lua *s = sandbox(NULL, 0, 0);
    dkv_err err = {0};
    dkv_status st = dkv_lua_run_file(s, path, &err);
    if (st != DKV_OK)
        print_message("%s\n", dkv_lua_traceback(s));
    assert_int_equal(st, DKV_OK);
    assert_int_equal(dkv_lua_run_file(s, "/nonexistent.lua", &err), DKV_ENOENT);
    dkv_lua_close(s, NULL);
    unlink(mod);
    unlink(path);
    rmdir(dir);
}

static void test_sandbox_errors(void **state)
{
    (void)state;
    dkv_lua *s = sandbox(NULL, 2000000, 32u << 20);
    dkv_err err = {0};
    assert_int_equal(run(s, "local x = 1\nlocal y = = 2\n", &err), DKV_EINVAL);
    assert_non_null(strstr(err.msg, "test:2:"));
    assert_int_equal(run(s, "local function f() error('boom') end\n\nf()\n", &err), DKV_EFORMAT);
    assert_string_equal(err.msg, "test:1: boom");
    assert_non_null(strstr(dkv_lua_traceback(s), "stack traceback:"));
    assert_non_null(strstr(dkv_lua_traceback(s), "test:3"));
    assert_int_equal(run(s, "error({})\n", &err), DKV_EFORMAT);
    assert_non_null(strstr(err.msg, "table value"));
    /* the instruction limit stops an infinite loop, even one that catches errors */
    assert_int_equal(run(s, "while true do pcall(function() while true do end end) end\n", &err), DKV_ERANGE);
    assert_non_null(strstr(err.msg, "instruction limit"));
    dkv_lua_close(s, NULL);

    s = sandbox(NULL, 0, 32u << 20);
    assert_int_equal(run(s, "local t = {}\nfor i = 1, 1e9 do t[i] = ('x'):rep(64) .. i end\n", &err), DKV_ENOMEM);
    assert_non_null(strstr(err.msg, "memory limit of 32 MiB"));
    /* the state is usable again once the error unwound */
    assert_int_equal(run(s, "local t = {} for i = 1, 1000 do t[i] = i end assert(#t == 1000)\n", &err), DKV_OK);
    /* SIGINT: the hook turns the flag into an error */
    dkv_interrupt_request();
    assert_int_equal(run(s, "local i = 0 while true do i = i + 1 end\n", &err), DKV_EINTR);
    assert_non_null(strstr(err.msg, "interrupted"));
    /* a signal no hook saw (a script too short for the count hook, or one that caught the error with pcall and
     * went on) still ends the script interrupted: its runs are kept aside, not committed as a success */
    assert_int_equal(run(s, "local x = 1\n", &err), DKV_EINTR);
    assert_non_null(strstr(err.msg, "interrupted (SIGINT)"));
    dkv_interrupt_clear();
    dkv_lua_close(s, NULL);
    assert_int_equal(dkv_lua_close(NULL, &err), DKV_OK);
}

/* ------------------------------------------------------------------ presets */

static int check_model_fn(lua_State *L)
{
    dkv_model *m = lua_touserdata(L, lua_upvalueindex(1));
    dkv_lua_check_model(L, 1, m);
    return 0;
}

static int check_gpu_fn(lua_State *L)
{
    dkv_gpu *g = lua_touserdata(L, lua_upvalueindex(1));
    dkv_lua_check_gpu(L, 1, g);
    return 0;
}

static void test_presets(void **state)
{
    (void)state;
    dkv_lua *s = sandbox(NULL, 0, 0);
    lua_State *L = dkv_lua_state(s);
    dkv_model m;
    dkv_gpu g;
    lua_pushlightuserdata(L, &m);
    lua_pushcclosure(L, check_model_fn, 1);
    lua_setglobal(L, "check_model");
    lua_pushlightuserdata(L, &g);
    lua_pushcclosure(L, check_gpu_fn, 1);
    lua_setglobal(L, "check_gpu");
    dkv_err err = {0};

    assert_int_equal(run(s, "check_model('llada-8b')", &err), DKV_OK);
    assert_string_equal(m.name, "llada-8b");
    assert_int_equal(m.n_layers, 32);
    assert_int_equal(m.vocab, 126464);
    assert_int_equal(dkv_model_kv_bytes_per_token(&m), 512 * 1024);      /* ANCHORS: 512 KiB */
    assert_int_equal(dkv_model_logit_row_bytes(&m), 126464 * 2);         /* 247 KiB */
    double wb = (double)dkv_model_weight_bytes(&m);
    assert_true(fabs(wb - 16.07e9) / 16.07e9 < 0.005);                   /* ANCHORS: 16.07 GB */
    assert_int_equal(run(s, "check_model('dream-7b')", &err), DKV_OK);
    assert_int_equal(dkv_model_kv_bytes_per_token(&m), 56 * 1024);       /* ANCHORS: 56 KiB */
    assert_true(m.qkv_bias);
    assert_int_equal(run(s, "check_model('tiny')", &err), DKV_OK);
    assert_int_equal(m.hidden, 64);

    assert_int_equal(run(s, "check_gpu('h200')", &err), DKV_OK);
    assert_true(g.hbm_bw == 4292e9 && g.flops_bf16 == 790e12 && g.pcie_h2d_pinned == 55.5e9);
    assert_true(g.pcie_bidir_pinned == 101.4e9 && g.pcie_h2d_pageable == 8.8e9 && g.pcie_d2h_pageable == 15.5e9);
    assert_true(fabs(g.hbm_bytes - 139.8 * 1073741824.0) < 1);
    assert_int_equal(g.n_sms, 132);
    assert_true(g.n_bw_curve >= 2 && g.bw_curve[g.n_bw_curve - 1].efficiency == 1.0);
    assert_int_equal(run(s, "check_gpu('rtx4090')", &err), DKV_OK);
    assert_true(g.max_num_logits == 4096 && g.max_num_batched_tokens == 8192 && g.retention == 0.5);
    assert_int_equal(run(s, "check_gpu('l40s')", &err), DKV_OK);
    assert_true(g.max_num_logits == 8192 && g.max_num_batched_tokens == 16384 && g.retention == 0.4);
    assert_int_equal(run(s, "check_gpu('a100-80g')", &err), DKV_OK);
    assert_true(g.max_num_logits == 16384 && g.max_num_batched_tokens == 32768 && g.retention == 0.3);
    assert_true(g.hbm_bytes == 80.0 * 1073741824.0);

    /* a table with a base overrides fields; the name says it is not the preset */
    assert_int_equal(run(s, "check_gpu{base = 'h200', profile = '', hbm_bytes = 2^30 * 96, bw_curve = {{64, 0.5}, {4096, 1}}}", &err), DKV_OK);
    assert_true(g.hbm_bytes == 96.0 * 1073741824.0 && g.hbm_bw == 4292e9 && g.n_bw_curve == 2);
    assert_string_equal(g.name, "h200+custom");
    assert_int_equal(run(s, "check_model{base = 'llada-8b', name = 'llada-fp8kv', kv_dtype = 'fp8'}", &err), DKV_OK);
    assert_int_equal(dkv_model_kv_bytes_per_token(&m), 256 * 1024);
    assert_string_equal(m.name, "llada-fp8kv");
    /* a full table without base */
    assert_int_equal(run(s, "check_model{n_layers=1, hidden=32, ffn=64, n_heads=2, n_kv_heads=1, head_dim=16,"
                            " vocab=50, mask_id=49, max_len=64, rope_theta=1e4}", &err), DKV_OK);
    assert_string_equal(m.name, "custom");

    /* errors name the field */
    assert_int_equal(run(s, "check_gpu{base = 'h200', hbm_bww = 1}", &err), DKV_EFORMAT);
    assert_string_equal(err.msg, "test:1: gpu: unknown field 'hbm_bww' (did you mean 'hbm_bw'?)");
    assert_int_equal(run(s, "check_gpu{base = 'h200', hbm_bw = -1}", &err), DKV_EFORMAT);
    assert_string_equal(err.msg, "test:1: gpu.hbm_bw: must be > 0 (got -1)");
    assert_int_equal(run(s, "check_gpu{base = 'h200', bw_curve = {{64, 0.5}, {32, 1}}}", &err), DKV_EFORMAT);
    assert_non_null(strstr(err.msg, "gpu.bw_curve[2].run_bytes: points must be sorted"));
    assert_int_equal(run(s, "check_gpu{base = 'h200', bw_curve = {{64, 1.5}}}", &err), DKV_EFORMAT);
    assert_non_null(strstr(err.msg, "gpu.bw_curve[1].efficiency"));
    assert_int_equal(run(s, "check_gpu{hbm_bytes = 1}", &err), DKV_EFORMAT);
    assert_string_equal(err.msg, "test:1: gpu.hbm_bw: required field is missing");
    assert_int_equal(run(s, "check_model{base = 'llada-8b', n_heads = 30}", &err), DKV_EFORMAT);
    assert_non_null(strstr(err.msg, "n_heads (30) is not a multiple of n_kv_heads (32)"));
    assert_int_equal(run(s, "check_model{base = 'llada-8b', kv_dtype = 'fp4'}", &err), DKV_EFORMAT);
    assert_non_null(strstr(err.msg, "model.kv_dtype: unknown value 'fp4'"));
    assert_int_equal(run(s, "check_model('lada-8b')", &err), DKV_EFORMAT);
    assert_non_null(strstr(err.msg, "unknown model preset 'lada-8b' (did you mean 'llada-8b'?"));
    assert_int_equal(run(s, "check_model('../../etc/passwd')", &err), DKV_EFORMAT);
    assert_non_null(strstr(err.msg, "bad preset name"));
    assert_int_equal(run(s, "check_gpu(42)", &err), DKV_EFORMAT);
    assert_non_null(strstr(err.msg, "expected a gpu preset name or a table, got number"));

    /* Lua side: resolved tables round-trip, lists, budget */
    assert_int_equal(run(s, "local dkv = require 'dkv'\n"
                            "local g = dkv.preset.gpu('h200')\n"
                            "assert(g.name == 'h200' and g.base == nil and g.hbm_bw == 4292e9)\n"
                            "check_gpu(g)\n"

                            "local c = dkv.preset.gpu('h200-calibrated')\n"
                            "assert(c.hbm_bw == 4292e9 and c.kclass.attn.scale > 1 and c.kclass.qkv.launch_s > 0)\n"
                            "check_gpu(c)\n"

                            "local b = dkv.budget('llada-8b', 'h200')\n"
                            "assert(math.abs(b.usable_bytes - (b.hbm_bytes * 0.9 - b.weight_bytes)) < 1)\n"
                            "assert(math.abs(b.kv_bytes / b.usable_bytes - 0.7) < 1e-12)\n"
                            "assert(b.kv_tokens == math.floor(b.kv_bytes / (512 * 1024)))\n"
                            "local ok, e = pcall(dkv.budget, 'llada-8b', {base = 'rtx4090', hbm_bytes = 2^34})\n"
                            "assert(not ok and e:find('does not fit'), e)\n",
                     &err),
                     DKV_OK);
    /* dkv.preset.list names every file of datasets/presets/<kind>/, sorted (listed here with
     * opendir, so a new preset is one file and no test changes) */
    for (int k = 0; k < 2; k++) {
        const char *kind = k ? "model" : "gpu";
        char want[1024], src[1400];
        preset_files(kind, want, sizeof want);
        assert_true(strchr(want, ',') != NULL);   /* at least two presets of each kind */
        snprintf(src, sizeof src,
                 "local dkv = require 'dkv'\n"
                 "local names = table.concat(dkv.preset.list('%s'), ',')\n"
                 "assert(names == '%s', names)\n", kind, want);
        assert_int_equal(run(s, src, &err), DKV_OK);
    }
    dkv_lua_close(s, NULL);
}

/* ------------------------------------------------------------------ run writer */

static void test_write_run_with_provenance(void **state)
{
    (void)state;
    char dir[TEST_TMPDIR_LEN], out[128];
    assert_int_equal(test_tmpdir_make(dir, "lua"), 0);
    snprintf(out, sizeof out, "%s/sub/r.h5", dir);  /* the folder is created */
    dkv_lua *s = sandbox(out, 0, 0);
    dkv_err err = {0};
    const char *code =
        "local dkv = require 'dkv'\n"
        "assert(dkv.output:find('r.h5'))\n"
        "assert(dkv.write_run('first', {params = {gpu = 'h200', n = 4, sizes = {1, 2}, nested = {a = 'x'}},\n"
        "  summary = {peak_bytes = 123456789012, ratio = 0.25, ok = true, label = 'fine'},\n"
        "  units = {peak_bytes = 'bytes'}, seed = 7,\n"
        "  tables = {mem = {t_s = {0, 0.5, 1}, bytes = {1, 2, 3}, tag = {'kv', 'act', 'kv'}, hot = {true, false, true}},\n"
        "            lat = {columns = {latency_s = {0.1, 0.2}}, units = {latency_s = 's'}, docs = {latency_s = 'e2e'}}}}))\n"
        "local ok, e = pcall(dkv.write_run, 'first', {})\n"
        "assert(not ok and e:find('already exists'), e)\n"
        "ok, e = pcall(dkv.write_run, 'bad', {tables = {t = {a = {1, 2}, b = {1}}}})\n"
        "assert(not ok and e:find('run.tables.t.b: has 1 values, other columns have 2', 1, true), e)\n"
        "ok, e = pcall(dkv.write_run, 'bad2', {sumary = {}})\n"
        "assert(not ok and e:find(\"did you mean 'summary'\"), e)\n"
        "assert(dkv.literal({b = {1, 2}, a = 'x', [3] = true}) == '{[3] = true, a = \"x\", b = {1, 2}}')\n"
        "local t = load('return ' .. dkv.literal({x = 0.1, y = {1, 2.5, 'q\\n'}, z = -3}))()\n"
        "assert(t.x == 0.1 and t.y[2] == 2.5 and t.y[3] == 'q\\n' and t.z == -3)\n";
    assert_int_equal(run(s, code, &err), DKV_OK);
    assert_int_equal(dkv_lua_runs_written(s), 1);
    assert_int_equal(dkv_lua_close(s, &err), DKV_OK);

    dkv_h5 *f;
    dkv_h5_run *r;
    assert_int_equal(dkv_h5_open_read(out, &f, &err), DKV_OK);
    /* "bad" failed its checks before anything was written; "bad2" too */
    assert_int_equal(dkv_h5_run_count(f), 1);
    assert_int_equal(dkv_h5_run_open(f, "first", &r, &err), DKV_OK);
    static const char *const prov[] = {"dkv_version", "git_commit", "script", "script_path", "defines", "config",
                                       "host", "start_time", "end_time", "status", "shard"};
    for (size_t i = 0; i < sizeof prov / sizeof prov[0]; i++) {
        char *v = NULL;
        assert_int_equal(dkv_h5_attr_get_str(r, NULL, prov[i], &v, &err), DKV_OK);
        if (strcmp(prov[i], "status") == 0)
            assert_string_equal(v, "complete");
        if (strcmp(prov[i], "shard") == 0)
            assert_string_equal(v, "1/3");
        if (strcmp(prov[i], "defines") == 0)
            assert_non_null(strstr(v, "n=3\nx=1.5"));
        if (strcmp(prov[i], "script") == 0)
            assert_non_null(strstr(v, "dkv.write_run('first'"));
        if (strcmp(prov[i], "config") == 0)
            assert_string_equal(v, "{gpu = \"h200\", n = 4, nested = {a = \"x\"}, sizes = {1, 2}}");
        if (strcmp(prov[i], "start_time") == 0)
            assert_true(strlen(v) == 20 && v[10] == 'T' && v[19] == 'Z');
        free(v);
    }
    int64_t i64;
    double d;
    char *str;
    assert_int_equal(dkv_h5_attr_get_i64(r, NULL, "seed", &i64, &err), DKV_OK);
    assert_int_equal(i64, 7);
    assert_int_equal(dkv_h5_attr_get_i64(r, "params", "n", &i64, &err), DKV_OK);
    assert_int_equal(i64, 4);
    assert_int_equal(dkv_h5_attr_get_str(r, "params", "nested", &str, &err), DKV_OK);
    assert_string_equal(str, "{a = \"x\"}");
    free(str);
    assert_int_equal(dkv_h5_attr_get_i64(r, "summary", "peak_bytes", &i64, &err), DKV_OK);
    assert_true(i64 == 123456789012LL);
    assert_int_equal(dkv_h5_attr_get_f64(r, "summary", "ratio", &d, &err), DKV_OK);
    assert_true(d == 0.25);
    assert_int_equal(dkv_h5_attr_get_i64(r, "summary", "ok", &i64, &err), DKV_OK);
    assert_int_equal(i64, 1);
    assert_int_equal(dkv_h5_attr_get_str(r, "summary", "units.peak_bytes", &str, &err), DKV_OK);
    assert_string_equal(str, "bytes");
    free(str);

    dkv_h5_table *t;
    assert_int_equal(dkv_h5_table_count(r), 2);
    assert_int_equal(dkv_h5_table_open(r, "mem", &t, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_nrecords(t), 3);
    assert_int_equal(dkv_h5_table_nfields(t), 4);
    dkv_h5_field fd;
    dkv_h5_table_field(t, 0, &fd, &err);   /* columns in name order */
    assert_string_equal(fd.name, "bytes");
    assert_int_equal(fd.type, DKV_H5_I64);
    dkv_h5_table_field(t, 1, &fd, &err);
    assert_string_equal(fd.name, "hot");
    assert_int_equal(fd.type, DKV_H5_U8);
    dkv_h5_table_field(t, 2, &fd, &err);   /* '_' sorts before 'a' */
    assert_string_equal(fd.name, "t_s");
    assert_int_equal(fd.type, DKV_H5_F64);
    dkv_h5_table_field(t, 3, &fd, &err);
    assert_string_equal(fd.name, "tag");
    assert_int_equal(fd.type, DKV_H5_STR32);
    double ts[3];
    assert_int_equal(dkv_h5_table_read_f64(t, "t_s", 0, 3, ts, &err), DKV_OK);
    assert_true(ts[0] == 0 && ts[1] == 0.5 && ts[2] == 1);
    dkv_h5_table_close(t);
    assert_int_equal(dkv_h5_table_open(r, "lat", &t, &err), DKV_OK);
    dkv_h5_table_field(t, 0, &fd, &err);
    assert_string_equal(fd.unit, "s");
    assert_string_equal(fd.doc, "e2e");
    dkv_h5_table_close(t);
    dkv_h5_run_free(r);
    dkv_h5_close(f, NULL);
    assert_int_equal(test_tmpdir_remove(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lconf_values_and_defaults),
        cmocka_unit_test(test_lconf_errors_name_the_field),
        cmocka_unit_test(test_lconf_edit_distance),
        cmocka_unit_test(test_sandbox_libraries),
        cmocka_unit_test(test_sandbox_require_paths),
        cmocka_unit_test(test_sandbox_errors),
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_write_run_with_provenance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
