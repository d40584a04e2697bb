/* test_lua_profile_write.c - the profile file dkv profile writes (core/cli/profile_lua.c), loaded
 * back by Lua: every table, row, extra column, the copied attention modes, first use, host,
 * provenance and the incomplete marker read back as written. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cli/profile_lua.c"
#include "test_tmpdir.h"

static double num(lua_State *L, const char *expr)
{
    char code[512];
    snprintf(code, sizeof code, "return %s", expr);
    lua_pushvalue(L, -1);
    lua_setglobal(L, "P");
    assert_int_equal(luaL_dostring(L, code), LUA_OK);
    double v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    return v;
}

static const char *str(lua_State *L, const char *expr)
{
    char code[512];
    snprintf(code, sizeof code, "return tostring(%s)", expr);
    lua_pushvalue(L, -1);
    lua_setglobal(L, "P");
    assert_int_equal(luaL_dostring(L, code), LUA_OK);
    static char out[512];
    snprintf(out, sizeof out, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    return out;
}

static void fill(dkv_prof *p, dkv_prof_table *gemm, dkv_prof_table *attn, dkv_prof_row *gr, dkv_prof_row *ar)
{
    memset(p, 0, sizeof *p);
    snprintf(p->gpu, sizeof p->gpu, "Test \"GPU\"");
    snprintf(p->sm, sizeof p->sm, "9.0");
    p->driver = 13000, p->runtime = 12080, p->repeats = 20, p->warmup = 2, p->est_s = 25, p->wall_s = 61.5;
    static const char *const mnk[] = {"m", "n", "k"}, *const af[] = {"q_rows", "kv_tokens", "heads", "kv_heads",
                                                                       "head_dim", "mode"};
    *gemm = (dkv_prof_table){.name = "qkv", .n_fields = 3, .note = "a \"note\"\nline", .rows = gr, .n = 2, .cap = 2};
    memcpy(gemm->fields, mnk, sizeof mnk);
    gr[0] = (dkv_prof_row){.f = {32, 12288, 4096}, .median_s = 2.5e-5, .p10_s = 2.4e-5, .p90_s = 2.7e-5,
                           .first_s = 3e-3, .launches = 1};
    gr[1] = (dkv_prof_row){.f = {512, 12288, 4096}, .median_s = 1e-4, .p10_s = 9e-5, .p90_s = 1.1e-4,
                           .first_s = 1e-3, .launches = 1, .cool_s = 9.5e-5, .cool_mhz = 1980, .hot_s = 1.2e-4,
                           .hot_mhz = 1515};   /* --states; gr[0] without (NAN) */
    gr[0].cool_s = gr[0].cool_mhz = gr[0].hot_s = gr[0].hot_mhz = NAN;
    *attn = (dkv_prof_table){.name = "attn", .n_fields = 6, .note = "attn", .rows = ar, .n = 1, .cap = 1};
    memcpy(attn->fields, af, sizeof af);
    attn->extra[0] = "items";
    ar[0] = (dkv_prof_row){.f = {256, 1024, 32, 32, 128, 0}, .median_s = 4e-5, .p10_s = 3.9e-5, .p90_s = 4.2e-5,
                           .first_s = 2e-4, .launches = 1, .x = {8}, .sm_mhz = 1980, .probe_mhz = 1702.5};
    p->tables[0] = *gemm, p->tables[1] = *attn, p->n_tables = 2;
    p->copy[0] = (dkv_prof_copy_row){0, 4096, 1e-5, 1.2e-5};
    p->copy[1] = (dkv_prof_copy_row){1, 268435456, 5e-3, 6e-3};
    p->n_copy = 2;
    p->compute_alone_s = 1.3e-4, p->compute_beside_s = 1.5e-4;
    p->host_launch_s = 3e-6, p->host_gemm_launch_s = 7e-6;
    p->host_resume_s = 2.5e-5, p->host_handover_s = 9.5e-5;
    p->mem_measured = true;
    p->mem_total_bytes = 150109880320.0, p->mem_context_bytes = 559939584.0, p->mem_libraries_bytes = 71303168.0;
    p->mem_blas_handle_bytes = 35651584.0, p->mem_blas_handle_again_bytes = 35651584.0;
    p->mem_first_launch_bytes = 4194304.0;
    static const uint32_t cl[8] = {396, 198, 124, 92, 69, 62, 47, 45};
    memcpy(p->attn_clusters[1][0], cl, sizeof cl);   /* head_dim 128 only: 64 is not written */
    memcpy(p->attn_clusters[1][1], cl, sizeof cl);
}

/* Writes p as dkv profile does into a fresh folder (dir) and loads it back: the state, the profile on its
 * stack (the test's failure names a file that is not Lua). */
static lua_State *write_and_load(const dkv_prof *p, const dkv_cli_profile_meta *m, char dir[TEST_TMPDIR_LEN])
{
    char path[TEST_TMPDIR_LEN + 16];
    assert_int_equal(test_tmpdir_make(dir, "profile"), 0);
    snprintf(path, sizeof path, "%s/p.lua", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    dkv_cli_profile_write(f, p, m);
    assert_int_equal(fclose(f), 0);
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    if (luaL_dofile(L, path) != LUA_OK)
        fail_msg("%s", lua_tostring(L, -1));
    return L;
}

static void test_write_and_load(void **state)
{
    (void)state;
    dkv_prof p;
    dkv_prof_table g, a;
    dkv_prof_row gr[2], ar[1];
    fill(&p, &g, &a, gr, ar);
    p.complete = false;
    snprintf(p.incomplete, sizeof p.incomplete, "deadline 300 s reached in section attn");
    char dir[TEST_TMPDIR_LEN];
    static const char *const models[] = {"llada-8b"};
    dkv_cli_profile_meta m = {.name = "test-20261201", .date = "2026-12-01T12:00:00Z",
                              .command = "dkv profile -o \"x.lua\"", .models = models, .n_models = 1};
    lua_State *L = write_and_load(&p, &m, dir);
    assert_true(lua_istable(L, -1));
    assert_int_equal((int)num(L, "P.format"), 1);
    assert_string_equal(str(L, "P.name"), "test-20261201");
    assert_string_equal(str(L, "P.complete"), "false");
    assert_string_equal(str(L, "P.incomplete"), "deadline 300 s reached in section attn");
    assert_string_equal(str(L, "P.provenance.gpu"), "Test \"GPU\"");
    assert_string_equal(str(L, "P.provenance.driver"), "13.0");
    assert_string_equal(str(L, "P.provenance.cuda_runtime"), "12.8");
    assert_string_equal(str(L, "P.provenance.command"), "dkv profile -o \"x.lua\"");
    assert_string_equal(str(L, "P.provenance.measured"), "true");
    assert_string_equal(str(L, "P.provenance.models[1]"), "llada-8b");
    assert_int_equal((int)num(L, "P.provenance.repeats"), 20);
    assert_string_equal(str(L, "P.kernels.qkv.note"), "a \"note\"\nline");
    assert_string_equal(str(L, "table.concat(P.kernels.qkv.fields, ',')"), "m,n,k");
    /* the two power states (--states) after the other extras; a row measured without them has zeros */
    assert_string_equal(str(L, "table.concat(P.kernels.qkv.extra, ',')"),
                        "p10_s,p90_s,first_s,cool_s,cool_mhz,hot_s,hot_mhz");
    assert_int_equal((int)num(L, "#P.kernels.qkv.rows"), 2);
    assert_int_equal((int)num(L, "#P.kernels.qkv.rows[2]"), 3 + 2 + 3 + 4);
    assert_float_equal(num(L, "P.kernels.qkv.rows[2][9]"), 9.5e-5, 1e-12);
    assert_float_equal(num(L, "P.kernels.qkv.rows[2][10]"), 1980, 0);
    assert_float_equal(num(L, "P.kernels.qkv.rows[2][11]"), 1.2e-4, 1e-12);
    assert_float_equal(num(L, "P.kernels.qkv.rows[2][12]"), 1515, 0);
    assert_float_equal(num(L, "P.kernels.qkv.rows[1][9]"), 0, 0);
    assert_float_equal(num(L, "P.kernels.qkv.rows[2][1]"), 512, 0);
    assert_float_equal(num(L, "P.kernels.qkv.rows[2][4]"), 1e-4, 1e-12);
    assert_float_equal(num(L, "P.kernels.qkv.rows[2][5]"), 1, 0);
    assert_float_equal(num(L, "P.kernels.qkv.rows[1][8]"), 3e-3, 1e-12);
    /* attention: the mode-0 row and its copies as modes 1 and 2, each with the items extra, the SM clock sampled
     * beside its calls and the probe's clock over them (--probe; a table none of whose rows has one, qkv above, has
     * no such column; without the L2 flush no warm_probe_mhz) */
    assert_string_equal(str(L, "table.concat(P.kernels.attn.extra, ',')"), "p10_s,p90_s,first_s,items,sm_mhz,probe_mhz");
    assert_int_equal((int)num(L, "#P.kernels.attn.rows"), 3);
    for (int i = 1; i <= 3; i++) {
        char e[64];
        snprintf(e, sizeof e, "P.kernels.attn.rows[%d][6]", i);
        assert_float_equal(num(L, e), i - 1, 0);
        snprintf(e, sizeof e, "#P.kernels.attn.rows[%d]", i);
        assert_int_equal((int)num(L, e), 6 + 2 + 3 + 1 + 1 + 1);
        snprintf(e, sizeof e, "P.kernels.attn.rows[%d][13]", i);
        assert_float_equal(num(L, e), 1980, 0);
        snprintf(e, sizeof e, "P.kernels.attn.rows[%d][14]", i);
        assert_float_equal(num(L, e), 1702.5, 0);
        snprintf(e, sizeof e, "P.kernels.attn.rows[%d][7]", i);
        assert_float_equal(num(L, e), 4e-5, 1e-12);
    }
    assert_float_equal(num(L, "P.kernels.attn.rows[3][12]"), 8, 0);
    assert_float_equal(num(L, "P.copy.contended[2][3]"), 6e-3, 1e-12);
    assert_float_equal(num(L, "P.copy.alone[1][2]"), 4096, 0);
    assert_float_equal(num(L, "P.copy.load_gemm_beside_h2d_s"), 1.5e-4, 1e-12);
    /* first use: median of the GEMM group's two shapes, the attention's one */
    assert_float_equal(num(L, "P.first_use.gemm_s"), 2e-3, 1e-12);
    assert_float_equal(num(L, "P.first_use.gemm_max_s"), 3e-3, 1e-12);
    assert_float_equal(num(L, "P.first_use.attn_s"), 2e-4, 1e-12);
    assert_float_equal(num(L, "P.host.per_launch_s"), 3e-6, 1e-15);
    assert_true(num(L, "P.host.base_s == nil and 1 or 0") == 1);
    assert_float_equal(num(L, "P.host.resume_s"), 2.5e-5, 1e-15);
    assert_float_equal(num(L, "P.host.handover_s"), 9.5e-5, 1e-15);
    /* the memory section, exact bytes */
    assert_float_equal(num(L, "P.memory.total_bytes"), 150109880320.0, 0);
    assert_float_equal(num(L, "P.memory.context_bytes"), 559939584.0, 0);
    assert_float_equal(num(L, "P.memory.libraries_bytes"), 71303168.0, 0);
    assert_float_equal(num(L, "P.memory.blas_handle_bytes"), 35651584.0, 0);
    assert_float_equal(num(L, "P.memory.first_launch_bytes"), 4194304.0, 0);
    assert_string_equal(str(L, "P.memory.method"), "cudaMemGetInfo");
    /* the attention kernel's clusters at once: one entry per measured head size and group */
    assert_int_equal((int)num(L, "#P.attn_waves"), 2);
    assert_int_equal((int)num(L, "P.attn_waves[1].head_dim"), 128);
    assert_int_equal((int)num(L, "P.attn_waves[2].group"), 1);
    assert_int_equal((int)num(L, "#P.attn_waves[2].clusters"), 8);
    assert_int_equal((int)num(L, "P.attn_waves[2].clusters[3]"), 124);
    lua_close(L);
    assert_int_equal(test_tmpdir_remove(dir), 0);
}

/* A --grid run without GEMM or attention tables (e.g. --grid kv_store, device call 25's compress run):
 * first_use holds the other group alone and the file is still Lua (it had "{, other_s = ...}"). */
static void test_first_use_other_only(void **state)
{
    (void)state;
    dkv_prof p;
    dkv_prof_table g, a;
    dkv_prof_row gr[2], ar[1];
    fill(&p, &g, &a, gr, ar);
    static const char *const sf[] = {"rows", "heads", "kv_heads", "head_dim"};
    dkv_prof_row sr = {.f = {32, 32, 32, 128}, .median_s = 1.5e-5, .p10_s = 1.4e-5, .p90_s = 1.6e-5,
                       .first_s = 4e-6, .launches = 1};
    dkv_prof_table st = {.name = "kv_store", .n_fields = 4, .note = "store", .rows = &sr, .n = 1, .cap = 1};
    memcpy(st.fields, sf, sizeof sf);
    p.tables[0] = st, p.n_tables = 1;
    p.complete = true;
    char dir[TEST_TMPDIR_LEN];
    static const char *const models[] = {"llada-8b"};
    dkv_cli_profile_meta m = {.name = "test-20261202", .date = "2026-12-02T02:00:00Z", .command = "dkv profile",
                              .models = models, .n_models = 1};
    lua_State *L = write_and_load(&p, &m, dir);
    assert_float_equal(num(L, "P.first_use.other_s"), 4e-6, 1e-15);
    assert_true(num(L, "P.first_use.gemm_s == nil and 1 or 0") == 1);
    lua_close(L);
    assert_int_equal(test_tmpdir_remove(dir), 0);
}

/* dkv profile --sustain: the sustained block, one record a run, its windows' clocks in order (a duty run with its
 * gap, step and cycle); a run without it writes no block (test_write_and_load's file has none) */
static void test_sustained(void **state)
{
    (void)state;
    dkv_prof p;
    dkv_prof_table g, a;
    dkv_prof_row gr[2], ar[1];
    fill(&p, &g, &a, gr, ar);
    p.complete = true;
    p.sustain_s = 2, p.sustain_windows = DKV_PROF_SUSTAIN_WIN, p.sustain_lead_s = 0.3;
    p.sustained[0] = (dkv_prof_sustained){.model = 1, .kind = DKV_PROF_SUSTAIN_GEMM, .rows = 4096, .calls = 812,
                                          .call_s = 2.46e-3, .nvml_mhz = 1530, .mhz = {1702.5, 1410, 1390.25, 1388}};
    p.sustained[1] = (dkv_prof_sustained){.model = 0, .kind = DKV_PROF_SUSTAIN_ATTN, .rows = 256, .keys = 2048,
                                          .calls = 40000, .call_s = 5e-5, .nvml_mhz = NAN, .mhz = {1980, 1900, 1890, 0}};
    p.sustained[2] = (dkv_prof_sustained){.model = 0, .kind = DKV_PROF_SUSTAIN_LAYER, .rows = 512, .keys = 1024,
                                          .calls = 300, .call_s = 1.3e-3, .nvml_mhz = 1700, .mhz = {1650, 1600, 1590, 1590}};
    p.sustained[3] = (dkv_prof_sustained){.model = 0, .kind = DKV_PROF_SUSTAIN_DUTY, .rows = 2048, .keys = 1024,
                                          .calls = 640, .call_s = 2.5e-3, .mhz = {1700, 1650, 1640, 1642},
                                          .gap_s = 0.01, .step_calls = 32, .cycle_s = 0.09012};
    p.n_sustained = 4;
    char dir[TEST_TMPDIR_LEN];
    static const char *const models[] = {"llada-8b", "dream-7b"};
    dkv_cli_profile_meta m = {.name = "test-20261203", .date = "2026-12-03T10:00:00Z", .command = "dkv profile",
                              .models = models, .n_models = 2};
    lua_State *L = write_and_load(&p, &m, dir);
    assert_float_equal(num(L, "P.sustained.seconds"), 2, 0);
    assert_int_equal((int)num(L, "P.sustained.windows"), DKV_PROF_SUSTAIN_WIN);
    assert_float_equal(num(L, "P.sustained.lead_s"), 0.3, 1e-12);
    assert_int_equal((int)num(L, "#P.sustained.runs"), 4);
    assert_string_equal(str(L, "P.sustained.runs[3].kind"), "layer");
    assert_true(num(L, "P.sustained.runs[3].gap_s == nil and 1 or 0") == 1);   /* duty fields: kind duty only */
    assert_string_equal(str(L, "P.sustained.runs[4].kind"), "duty");
    assert_float_equal(num(L, "P.sustained.runs[4].gap_s"), 0.01, 1e-12);
    assert_int_equal((int)num(L, "P.sustained.runs[4].step_calls"), 32);
    assert_float_equal(num(L, "P.sustained.runs[4].cycle_s"), 0.09012, 1e-12);
    assert_string_equal(str(L, "table.concat(P.sustained.runs[4].mhz, ',')"), "1700.0,1650.0,1640.0,1642.0");
    assert_float_equal(num(L, "P.sustained.runs[3].keys"), 1024, 0);
    assert_string_equal(str(L, "P.sustained.runs[1].model"), "dream-7b");
    assert_string_equal(str(L, "P.sustained.runs[1].kind"), "gemm");
    assert_float_equal(num(L, "P.sustained.runs[1].rows"), 4096, 0);
    assert_float_equal(num(L, "P.sustained.runs[1].keys"), 0, 0);
    assert_int_equal((int)num(L, "P.sustained.runs[1].calls"), 812);
    assert_float_equal(num(L, "P.sustained.runs[1].call_s"), 2.46e-3, 1e-12);
    assert_float_equal(num(L, "P.sustained.runs[1].nvml_mhz"), 1530, 0);
    assert_string_equal(str(L, "table.concat(P.sustained.runs[1].mhz, ',')"), "1702.5,1410.0,1390.2,1388.0");
    assert_string_equal(str(L, "P.sustained.runs[2].model"), "llada-8b");
    assert_string_equal(str(L, "P.sustained.runs[2].kind"), "attn");
    assert_float_equal(num(L, "P.sustained.runs[2].keys"), 2048, 0);
    assert_float_equal(num(L, "P.sustained.runs[2].nvml_mhz"), 0, 0);   /* not sampled */
    assert_float_equal(num(L, "P.sustained.runs[2].mhz[4]"), 0, 0);
    lua_close(L);
    assert_int_equal(test_tmpdir_remove(dir), 0);
    /* --sustain-windows 6 --sustain-lead 0: six values a run */
    p.sustain_windows = 6, p.sustain_lead_s = 0;
    p.sustained[0].mhz[4] = 1380, p.sustained[0].mhz[5] = 1381;
    L = write_and_load(&p, &m, dir);
    assert_int_equal((int)num(L, "P.sustained.windows"), 6);
    assert_float_equal(num(L, "P.sustained.lead_s"), 0, 0);
    assert_string_equal(str(L, "table.concat(P.sustained.runs[1].mhz, ',')"), "1702.5,1410.0,1390.2,1388.0,1380.0,1381.0");
    lua_close(L);
    assert_int_equal(test_tmpdir_remove(dir), 0);
    p.sustain_s = 0;   /* no --sustain: no block */
    L = write_and_load(&p, &m, dir);
    assert_true(num(L, "P.sustained == nil and 1 or 0") == 1);
    lua_close(L);
    assert_int_equal(test_tmpdir_remove(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_write_and_load), cmocka_unit_test(test_first_use_other_only),
                                       cmocka_unit_test(test_sustained)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
