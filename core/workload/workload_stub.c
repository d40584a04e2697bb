/* workload_stub.c - temporary: every call fails with DKV_EUNSUPPORTED until implemented. */
#include "workload/workload.h"

#include <string.h>

void dkv_workload_opts_default(dkv_workload_opts *o)
{
    memset(o, 0, sizeof *o);
    o->time_scale = 1.0;
    o->rate_scale = 1.0;
    o->seed = 1;
}
#define NYI(what) return dkv_err_set(err, DKV_EUNSUPPORTED, "%s: not implemented yet", what)
dkv_len_dist dkv_len_fixed(uint32_t value) { dkv_len_dist d = {.kind = DKV_LEN_FIXED, .value = value}; return d; }
dkv_len_dist dkv_len_uniform(uint32_t lo, uint32_t hi) { dkv_len_dist d = {.kind = DKV_LEN_UNIFORM, .lo = lo, .hi = hi}; return d; }
dkv_len_dist dkv_len_lognormal(double mu, double sigma) { dkv_len_dist d = {.kind = DKV_LEN_LOGNORMAL, .mu = mu, .sigma = sigma}; return d; }
dkv_status dkv_len_lognormal_mean_median(double mean, double median, dkv_len_dist *out, dkv_err *err) { NYI("lognormal"); }
dkv_len_dist dkv_len_empirical(const dkv_lengths *table) { dkv_len_dist d = {.kind = DKV_LEN_EMPIRICAL, .table = table}; return d; }
dkv_status dkv_len_dist_validate(const dkv_len_dist *d, const char *what, dkv_err *err) { NYI("len"); }
dkv_status dkv_lengths_load(const char *path, dkv_lengths **out, dkv_err *err) { NYI("lengths"); }
dkv_status dkv_lengths_from_workload(const dkv_workload *w, dkv_len_column col, dkv_lengths **out, dkv_err *err) { NYI("lengths"); }
dkv_status dkv_lengths_from_array(const uint32_t *v, size_t n, dkv_lengths **out, dkv_err *err) { NYI("lengths"); }
size_t dkv_lengths_count(const dkv_lengths *t) { return 0; }
uint32_t dkv_lengths_at(const dkv_lengths *t, size_t i) { return 0; }
void dkv_lengths_free(dkv_lengths *t) {}
void dkv_synth_cfg_default(dkv_synth_cfg *c) { memset(c, 0, sizeof *c); }
dkv_status dkv_workload_synth(const dkv_synth_cfg *cfg, const dkv_workload_opts *opts, dkv_workload **out, dkv_err *err) { NYI("synth"); }
const char *dkv_trace_format_name(dkv_trace_format f) { return "?"; }
dkv_status dkv_trace_format_parse(const char *s, dkv_trace_format *out, dkv_err *err) { NYI("format"); }
dkv_status dkv_workload_read(const char *path, dkv_trace_format fmt, const dkv_workload_opts *opts, dkv_workload **out, dkv_err *err) { NYI("read"); }
dkv_status dkv_workload_from_requests(const dkv_request *reqs, size_t n, const dkv_workload_opts *opts, dkv_workload **out, dkv_err *err) { NYI("from_requests"); }
void dkv_workload_free(dkv_workload *w) {}
size_t dkv_workload_count(const dkv_workload *w) { return 0; }
const dkv_request *dkv_workload_get(const dkv_workload *w, size_t i) { return NULL; }
const dkv_request *dkv_workload_requests(const dkv_workload *w) { return NULL; }
uint64_t dkv_workload_skipped(const dkv_workload *w) { return 0; }
const char *dkv_workload_source(const dkv_workload *w) { return ""; }
bool dkv_workload_is_closed(const dkv_workload *w) { return false; }
uint32_t dkv_workload_users(const dkv_workload *w) { return 0; }
bool dkv_workload_closed_release(dkv_workload *w, size_t finished, double finish_s, uint32_t *next) { return false; }
void dkv_workload_closed_reset(dkv_workload *w) {}
dkv_status dkv_workload_summarize(const dkv_workload *w, dkv_workload_summary *out, dkv_err *err) { NYI("summary"); }
