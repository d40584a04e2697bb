/* mem_h5.c - writes a memory manager's statistics and time series into a results run. */
#include "io/mem_h5.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct tag_rec {
    char tag[DKV_H5_STR32_LEN];
    uint64_t requested, allocated, peak_allocated, n_acquire;
} tag_rec;

static dkv_status sum_u(dkv_h5_run *run, const char *key, uint64_t v, const char *unit, dkv_err *err)
{
    dkv_status st = dkv_h5_attr_u64(run, "summary", key, v, err);
    if (!st && unit && *unit) {
        char k[96];
        snprintf(k, sizeof k, "units.%s", key);
        st = dkv_h5_attr_str(run, "summary", k, unit, err);
    }
    return st;
}

static dkv_status sum_f(dkv_h5_run *run, const char *key, double v, const char *unit, dkv_err *err)
{
    dkv_status st = dkv_h5_attr_f64(run, "summary", key, v, err);
    if (!st && unit && *unit) {
        char k[96];
        snprintf(k, sizeof k, "units.%s", key);
        st = dkv_h5_attr_str(run, "summary", k, unit, err);
    }
    return st;
}

dkv_status dkv_mem_h5_write(dkv_h5_run *run, const dkv_mem *m, dkv_err *err)
{
    const dkv_mem_options *o = dkv_mem_get_options(m);
    dkv_mem_stats s;
    dkv_mem_stats_get(m, &s);
    dkv_status st = DKV_OK;
#define P_STR(k, v) if (!st) st = dkv_h5_attr_str(run, "params", k, v, err)
#define P_I(k, v) if (!st) st = dkv_h5_attr_u64(run, "params", k, (uint64_t)(v), err)
#define P_F(k, v) if (!st) st = dkv_h5_attr_f64(run, "params", k, v, err)
    P_STR("mem.kind", dkv_mem_kind_name(o->kind));
    P_I("mem.capacity_bytes", o->capacity_bytes);
    P_F("mem.release_delay_s", o->release_delay_s);
    P_I("mem.sample_stride", o->sample_stride);
    if (o->kind == DKV_MEM_CACHING)
        P_F("mem.max_split_size", o->max_split_size == UINT64_MAX ? -1.0 : (double)o->max_split_size);
    if (o->kind == DKV_MEM_BLOCKPOOL) {
        P_I("mem.block_bytes", dkv_mem_block_bytes(m));
        P_I("mem.chunk_blocks", o->chunk_blocks);
        P_I("mem.initial_bytes", o->initial_bytes);
        P_I("mem.grow", o->grow);
        P_I("mem.shrink", o->shrink);
        P_I("mem.n_instances", o->n_instances ? o->n_instances : 1);
        P_STR("mem.share", o->share == DKV_MEM_PARTITIONED ? "partitioned" : "shared");
    }
#define S_U(k, unit) if (!st) st = sum_u(run, #k, s.k, unit, err)
#define S_F(k, unit) if (!st) st = sum_f(run, #k, s.k, unit, err)
    S_U(requested, "bytes"); S_U(allocated, "bytes"); S_U(reserved, "bytes");
    S_U(peak_requested, "bytes"); S_U(peak_allocated, "bytes"); S_U(peak_reserved, "bytes");
    S_U(pending_bytes, "bytes"); S_U(live, "");
    S_F(internal_frag, "fraction"); S_F(external_frag, "fraction");
    S_F(peak_internal_frag, "fraction"); S_F(peak_external_frag, "fraction");
    S_F(mean_internal_frag, "fraction"); S_F(mean_external_frag, "fraction");
    S_F(external_frag_at_peak, "fraction"); S_F(internal_frag_at_peak, "fraction");
    S_U(largest_free, "bytes");
    S_U(n_acquire, ""); S_U(n_release, ""); S_U(n_retain, ""); S_U(n_events, "");
    S_U(n_failed, ""); S_U(n_failed_frag, "");
    S_U(reuse_hits, ""); S_U(reuse_total, ""); S_F(reuse_rate, "fraction");
    S_U(bad_double_release, ""); S_U(bad_unknown_id, ""); S_U(bad_underflow, "");
    S_U(bad_size, ""); S_U(bad_other, "");
    S_U(device_allocs, ""); S_U(device_frees, ""); S_U(device_alloc_bytes, "bytes");
    S_F(device_time_s, "s"); S_U(setup_bytes, "bytes"); S_F(setup_time_s, "s");
    S_U(segments, "");
    if (o->kind == DKV_MEM_CACHING) {
        S_U(inactive_split_bytes, "bytes"); S_U(inactive_split_blocks, "");
        S_U(num_alloc_retries, ""); S_U(num_ooms, "");
    }
    if (o->kind == DKV_MEM_BLOCKPOOL) {
        S_U(blocks_total, ""); S_U(blocks_free, "");
    }
    if (st)
        return st;

    static const dkv_h5_field sf[] = {
        {"time_s", DKV_H5_F64, offsetof(dkv_mem_sample, time_s), "s", "manager clock at the sample"},
        {"event", DKV_H5_U64, offsetof(dkv_mem_sample, event), "", "index of the event the sample follows"},
        {"requested", DKV_H5_U64, offsetof(dkv_mem_sample, requested), "bytes", "bytes callers asked for"},
        {"allocated", DKV_H5_U64, offsetof(dkv_mem_sample, allocated), "bytes", "bytes handed out"},
        {"reserved", DKV_H5_U64, offsetof(dkv_mem_sample, reserved), "bytes", "bytes held from the device"},
    };
    dkv_h5_table *t = NULL;
    size_t n;
    const dkv_mem_sample *ser = dkv_mem_series(m, &n);
    st = dkv_h5_table_create(run, "mem_series", sizeof(dkv_mem_sample), sf, 5, &t, err);
    if (!st)
        st = dkv_h5_table_append(t, ser, n, err);
    dkv_h5_table_close(t);
    if (st)
        return st;

    static const dkv_h5_field tf[] = {
        {"tag", DKV_H5_STR32, offsetof(tag_rec, tag), "", "what the memory holds"},
        {"requested", DKV_H5_U64, offsetof(tag_rec, requested), "bytes", "requested now"},
        {"allocated", DKV_H5_U64, offsetof(tag_rec, allocated), "bytes", "allocated now"},
        {"peak_allocated", DKV_H5_U64, offsetof(tag_rec, peak_allocated), "bytes", "highest allocated"},
        {"n_acquire", DKV_H5_U64, offsetof(tag_rec, n_acquire), "", "acquisitions"},
    };
    tag_rec tr[DKV_MEM_TAG_COUNT];
    memset(tr, 0, sizeof tr);
    for (int i = 0; i < DKV_MEM_TAG_COUNT; i++) {
        snprintf(tr[i].tag, sizeof tr[i].tag, "%s", dkv_mem_tag_name((dkv_mem_tag)i));
        tr[i].requested = s.tag[i].requested;
        tr[i].allocated = s.tag[i].allocated;
        tr[i].peak_allocated = s.tag[i].peak_allocated;
        tr[i].n_acquire = s.tag[i].n_acquire;
    }
    st = dkv_h5_table_create(run, "mem_tags", sizeof(tag_rec), tf, 5, &t, err);
    if (!st)
        st = dkv_h5_table_append(t, tr, DKV_MEM_TAG_COUNT, err);
    dkv_h5_table_close(t);
    return st;
}
