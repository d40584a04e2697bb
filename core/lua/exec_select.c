/* exec_select.c - the sparse selections of dkv.execute (exec_select.h). */
#include "lua/exec_select.h"

#include <lauxlib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lua/lconf.h"

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return false;
    *p = q, *cap = c;
    return true;
}

void dkv_exec_select_hook(void *user, const dkv_select_report *r)
{
    dkv_exec_select *s = user;
    size_t nk = (size_t)r->n_sets * r->keep;
    if (s->failed || !grow((void **)&s->row, &s->cap, s->n + r->n_sets, sizeof *s->row) ||
        !grow((void **)&s->pos, &s->cap_pos, s->n_pos + nk + 1, sizeof *s->pos)) {
        s->failed = true;
        return;
    }
    for (uint32_t k = 0; k < r->n_sets; k++)
        s->row[s->n++] = (dkv_exec_select_row){.step = r->step_index, .request = r->request, .layer = r->layer,
                                               .set = k, .sets = r->n_sets, .keep = r->keep,
                                               .differs = r->differs[k], .followed = r->followed,
                                               .margin = r->margin[k], .mag = r->mag[k], .lam = r->lam,
                                               .pos = s->n_pos + (size_t)k * r->keep};
    memcpy(s->pos + s->n_pos, r->kept, nk * sizeof *s->pos);
    s->n_pos += nk;
}

int dkv_exec_select_push(lua_State *L, const dkv_exec_select *s)
{
    static const char *const cols[] = {"request", "step", "layer", "set", "sets", "keep", "kept", "differs", "margin",
                                       "mag", "lam", "followed"};
    if (!s->n)
        return 0;
    lua_createtable(L, 0, 12);
    for (int c = 0; c < 12; c++) {
        lua_createtable(L, (int)s->n, 0);
        for (size_t i = 0; i < s->n; i++) {
            const dkv_exec_select_row *r = &s->row[i];
            if (c == 6) {
                lua_createtable(L, (int)r->keep, 0);
                for (uint32_t k = 0; k < r->keep; k++) {
                    lua_pushinteger(L, s->pos[r->pos + k]);
                    lua_rawseti(L, -2, (lua_Integer)k + 1);
                }
            } else if (c >= 8 && c <= 10) {
                float v = c == 8 ? r->margin : c == 9 ? r->mag : r->lam;
                lua_pushnumber(L, isinf(v) ? HUGE_VAL : v);
            } else {
                uint64_t v = c == 0 ? r->request : c == 1 ? r->step : c == 2 ? r->layer : c == 3 ? r->set
                           : c == 4 ? r->sets : c == 5 ? r->keep : c == 7 ? r->differs : r->followed;
                lua_pushinteger(L, (lua_Integer)v);
            }
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        lua_setfield(L, -2, cols[c]);
    }
    return 1;
}

void dkv_exec_select_free(dkv_exec_select *s)
{
    if (!s)
        return;
    free(s->row);
    free(s->pos);
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------------ opts.follow.select */

enum { C_REQ, C_STEP, C_LAYER, C_SET, C_SETS, C_KEEP, C_KEPT, N_COL };

static lua_Integer cell(lua_State *L, int col, size_t i, const char *path, const char *name, lua_Integer lo)
{
    lua_rawgeti(L, col, (lua_Integer)i + 1);
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < lo || lua_tointeger(L, -1) > (lua_Integer)UINT32_MAX - 1)
        dkv_lconf_error(L, path, "select", "row %zu, %s: expected an integer >= %lld, got %s", i + 1, name,
                        (long long)lo, lua_isinteger(L, -1) ? "one out of range" : luaL_typename(L, -1));
    lua_Integer v = lua_tointeger(L, -1);
    lua_pop(L, 1);
    return v;
}

/* Checks row i against the record it belongs to (set 0 opens one) and returns its keep. */
static uint32_t check_row(lua_State *L, const int *col, size_t i, const char *path, const dkv_exec_follow *f,
                          lua_Integer *open)
{
    static const char *const nm[] = {"request", "step", "layer", "set", "sets", "keep"};
    lua_Integer v[C_KEPT];
    for (int c = 0; c < C_KEPT; c++)
        v[c] = cell(L, col[c], i, path, nm[c], c == C_SETS ? 1 : 0);
    if ((uint64_t)v[C_REQ] >= f->n)
        dkv_lconf_error(L, path, "select", "row %zu: request %lld is not one of the trajectory's 0 .. %u", i + 1,
                        (long long)v[C_REQ], f->n - 1);
    bool first = v[C_SET] == 0;
    if (v[C_SET] >= v[C_SETS] || (!first && (open[C_SET] + 1 != v[C_SET] || open[C_REQ] != v[C_REQ] ||
                                             open[C_STEP] != v[C_STEP] || open[C_LAYER] != v[C_LAYER] ||
                                             open[C_SETS] != v[C_SETS] || open[C_KEEP] != v[C_KEEP])))
        dkv_lconf_error(L, path, "select", "row %zu: set %lld of %lld does not continue the rows before it (the sets "
                        "of one request, step and layer come in order 0 .. sets-1)", i + 1, (long long)v[C_SET],
                        (long long)v[C_SETS]);
    if (first && open[C_SETS] > 0 && open[C_SET] + 1 != open[C_SETS])
        dkv_lconf_error(L, path, "select", "row %zu: the record before it has %lld of %lld sets", i + 1,
                        (long long)open[C_SET] + 1, (long long)open[C_SETS]);
    memcpy(open, v, sizeof v);
    lua_rawgeti(L, col[C_KEPT], (lua_Integer)i + 1);
    if (!lua_istable(L, -1) || lua_rawlen(L, -1) != (size_t)v[C_KEEP])
        dkv_lconf_error(L, path, "select", "row %zu, kept: expected an array of %lld positions", i + 1,
                        (long long)v[C_KEEP]);
    lua_pop(L, 1);
    return (uint32_t)v[C_KEEP];
}

static void fill(lua_State *L, const int *col, size_t n, const char *path, dkv_exec_follow *f, uint32_t *cnt)
{
    dkv_follow_sel *cur = NULL;
    uint32_t *p = f->sel_pos;
    for (size_t i = 0; i < n; i++) {
        uint32_t rq = (uint32_t)cell(L, col[C_REQ], i, path, "request", 0);
        uint32_t set = (uint32_t)cell(L, col[C_SET], i, path, "set", 0);
        if (set == 0) {
            dkv_follow *q = &f->req[rq];
            cur = (dkv_follow_sel *)&q->sel[cnt[rq]++];
            *cur = (dkv_follow_sel){.step = (uint64_t)cell(L, col[C_STEP], i, path, "step", 0),
                                    .layer = (uint32_t)cell(L, col[C_LAYER], i, path, "layer", 0),
                                    .n_sets = (uint32_t)cell(L, col[C_SETS], i, path, "sets", 1),
                                    .keep = (uint32_t)cell(L, col[C_KEEP], i, path, "keep", 0), .pos = p};
        }
        lua_rawgeti(L, col[C_KEPT], (lua_Integer)i + 1);
        for (uint32_t k = 0; k < cur->keep; k++) {
            lua_rawgeti(L, -1, (lua_Integer)k + 1);
            if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0 || lua_tointeger(L, -1) >= (lua_Integer)UINT32_MAX)
                dkv_lconf_error(L, path, "select", "row %zu, kept[%u]: expected a position >= 0", i + 1, k + 1);
            *p++ = (uint32_t)lua_tointeger(L, -1);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
}

void dkv_exec_select_read(lua_State *L, int idx, const char *path, dkv_exec_follow *f)
{
    static const char *const nm[] = {"request", "step", "layer", "set", "sets", "keep", "kept"};
    idx = lua_absindex(L, idx);
    lua_getfield(L, idx, "select");
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return;
    }
    if (!lua_istable(L, -1))
        dkv_lconf_error(L, path, "select", "expected the select table of dkv.execute{outputs = true}, got %s",
                        luaL_typename(L, -1));
    int t = lua_gettop(L), col[N_COL];
    size_t n = 0;
    for (int c = 0; c < N_COL; c++) {
        lua_getfield(L, t, nm[c]);
        if (!lua_istable(L, -1) || (c && lua_rawlen(L, -1) != n))
            dkv_lconf_error(L, path, "select", "%s: expected an array of one length with the other columns", nm[c]);
        n = lua_rawlen(L, -1);
        col[c] = lua_gettop(L);
    }
    size_t n_rec = 0, n_pos = 0;
    lua_Integer open[C_KEPT] = {0};
    for (size_t i = 0; i < n; i++) {
        n_pos += check_row(L, col, i, path, f, open);
        n_rec += open[C_SET] == 0;
    }
    if (n && open[C_SET] + 1 != open[C_SETS])
        dkv_lconf_error(L, path, "select", "the last record has %lld of %lld sets", (long long)open[C_SET] + 1,
                        (long long)open[C_SETS]);
    uint32_t *cnt = calloc(f->n ? f->n : 1, sizeof *cnt);   /* nothing raises from here to its free */
    f->sel = calloc(n_rec + 1, sizeof *f->sel);
    f->sel_pos = malloc((n_pos + 1) * sizeof *f->sel_pos);
    if (!cnt || !f->sel || !f->sel_pos) {
        free(cnt);
        luaL_error(L, "%s: out of memory", path);
    }
    for (size_t i = 0; i < n; i++)
        if (cell(L, col[C_SET], i, path, "set", 0) == 0)
            cnt[cell(L, col[C_REQ], i, path, "request", 0)]++;
    for (uint32_t r = 0, off = 0; r < f->n; r++) {
        f->req[r].has_sel = true;
        f->req[r].sel = f->sel + off;
        f->req[r].n_sel = cnt[r];
        off += cnt[r];
        cnt[r] = 0;
    }
    fill(L, col, n, path, f, cnt);
    free(cnt);
    lua_settop(L, t - 1);
}
