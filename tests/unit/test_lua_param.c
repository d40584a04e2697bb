/* test_lua_param.c - declared parameters (core/lua/l_param.c): dkv.param returns the -D value or
 * the default and checks its type; a -D name the script does not know is a usage error with
 * "did you mean", not catchable by pcall; reading dkv.params makes a name known; the listing
 * mode of `dkv run SCRIPT --help` stops at the first work call. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua/dkv_lua.h"

static dkv_lua *sandbox(const char *const *params, size_t n, bool listing)
{
    dkv_lua_config cfg = dkv_lua_config_default();
    cfg.params = params;
    cfg.nparams = n;
    cfg.list_params = listing;
    dkv_lua *s = NULL;
    dkv_err err = {0};
    assert_int_equal(dkv_lua_new(&cfg, &s, &err), DKV_OK);
    return s;
}

static dkv_status run(dkv_lua *s, const char *code, dkv_err *err)
{
    dkv_status st = dkv_lua_run_string(s, "=exp.lua", code, err);
    if (st != DKV_OK)
        print_message("(lua) %s\n", err->msg);
    return st;
}

static void test_values_and_defaults(void **state)
{
    (void)state;
    static const char *const p[] = {"n=20", "rate=0.5", "gpu=l40s", "flag=false", "label=7"};
    dkv_lua *s = sandbox(p, 5, false);
    dkv_err err = {0};
    assert_int_equal(run(s, "local dkv = require 'dkv'\n"
                            "assert(dkv.param('n', 48, 'requests') == 20 and math.type(dkv.param('n', 48, 'x')) == 'integer')\n"
                            "assert(dkv.param('rate', 4, 'rate') == 0.5)\n"
                            "assert(dkv.param('gpu', 'rtx4090', 'gpu') == 'l40s')\n"
                            "assert(dkv.param('flag', true, 'a flag') == false)\n"
                            "assert(dkv.param('label', 'x', 'a string') == 7)\n"     /* as dkv.params gives it */
                            "assert(dkv.param('missing', 3, 'not given') == 3)\n"
                            "assert(dkv.param('none', nil, 'nil default') == nil)\n",
                         &err),
                     DKV_OK);
    assert_false(dkv_lua_usage_error(s));
    dkv_lua_close(s, NULL);
}

static void test_type_errors(void **state)
{
    (void)state;
    static const struct {
        const char *def, *code, *want;
    } cases[] = {
        {"n=abc", "require('dkv').param('n', 48, 'requests')", "-D n=abc: parameter 'n' expects a number (default 48)"},
        {"n=", "require('dkv').param('n', 48, 'requests')", "-D n=: parameter 'n' expects a number"},
        {"on=1", "require('dkv').param('on', true, 'a flag')", "-D on=1: parameter 'on' expects true or false"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *const p[] = {cases[i].def};
        dkv_lua *s = sandbox(p, 1, false);
        dkv_err err = {0};
        /* pcall cannot turn a usage error into a default */
        char code[256];
        snprintf(code, sizeof code, "pcall(function() %s end)\nprint('not reached')", cases[i].code);
        assert_int_equal(run(s, code, &err), DKV_EINVAL);
        assert_true(dkv_lua_usage_error(s));
        assert_non_null(strstr(err.msg, cases[i].want));
        dkv_lua_close(s, NULL);
    }
    /* bad declarations are script errors, not usage errors */
    dkv_lua *s = sandbox(NULL, 0, false);
    dkv_err err = {0};
    assert_int_not_equal(run(s, "require('dkv').param('n', 1)", &err), DKV_OK);
    assert_false(dkv_lua_usage_error(s));
    assert_int_not_equal(run(s, "require('dkv').param('9x', 1, 'h')", &err), DKV_OK);
    assert_int_not_equal(run(s, "require('dkv').param('t', {}, 'h')", &err), DKV_OK);
    assert_int_not_equal(run(s, "local d = require('dkv'); d.param('a', 1, 'h'); d.param('a', 2, 'h')", &err), DKV_OK);
    assert_non_null(strstr(err.msg, "declared twice with different defaults"));
    dkv_lua_close(s, NULL);
}

static void test_unknown_names(void **state)
{
    (void)state;
    static const char *const p[] = {"gpuu=l40s", "laod=8", "n=3"};
    dkv_lua *s = sandbox(p, 3, false);
    dkv_err err = {0};
    /* the first print (or work call) checks; pcall does not swallow it */
    assert_int_equal(run(s, "local dkv = require 'dkv'\n"
                            "local gpu = dkv.param('gpu', 'rtx4090', 'GPU preset')\n"
                            "local load = dkv.param('load', 4, 'rate multiplier')\n"
                            "local n = dkv.params.n\n"
                            "while true do pcall(print, 'x') end\n",
                         &err),
                     DKV_EINVAL);
    assert_true(dkv_lua_usage_error(s));
    assert_non_null(strstr(err.msg, "-D gpuu=l40s: exp.lua has no parameter 'gpuu' (did you mean 'gpu'?)"));
    assert_non_null(strstr(err.msg, "-D laod=8: exp.lua has no parameter 'laod' (did you mean 'load'?)"));
    assert_non_null(strstr(err.msg, "its parameters: gpu, load, n"));
    assert_null(strstr(err.msg, "-D n=3"));   /* read from dkv.params: known */
    dkv_lua_close(s, NULL);
    /* a script that never prints or works is checked when it ends; no near name, no suggestion */
    static const char *const q[] = {"zzz=1"};
    s = sandbox(q, 1, false);
    assert_int_equal(run(s, "local x = 1", &err), DKV_EINVAL);
    assert_non_null(strstr(err.msg, "has no parameter 'zzz'; its parameters: (none)"));
    dkv_lua_close(s, NULL);
}

static void test_listing(void **state)
{
    (void)state;
    dkv_lua *s = sandbox(NULL, 0, true);
    dkv_err err = {0};
    assert_int_equal(run(s, "local dkv = require 'dkv'\n"
                            "print('silenced')\n"
                            "local a = dkv.param('gpu', 'h200', 'GPU preset')\n"
                            "local b = dkv.param('n', 8, 'requests')\n"
                            "local c = dkv.params.extra\n"
                            "dkv.simulate{}\n"                         /* stops here, no error */
                            "dkv.param('late', 1, 'never reached')\n",
                         &err),
                     DKV_OK);
    char *text = dkv_lua_params_help(s);
    assert_non_null(text);
    assert_non_null(strstr(text, "gpu"));
    assert_non_null(strstr(text, "\"h200\""));
    assert_non_null(strstr(text, "GPU preset"));
    assert_true(strstr(text, "gpu") < strstr(text, "  n "));   /* declaration order */
    assert_non_null(strstr(text, "extra"));
    assert_non_null(strstr(text, "(read from dkv.params, not declared)"));
    assert_null(strstr(text, "late"));
    free(text);
    dkv_lua_close(s, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_and_defaults),
        cmocka_unit_test(test_type_errors),
        cmocka_unit_test(test_unknown_names),
        cmocka_unit_test(test_listing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
