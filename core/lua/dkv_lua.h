/* dkv_lua.h - the sandboxed Lua interpreter that runs dkv experiments, and the run context
 * that bindings (dkv.simulate, dkv.mem, ...) share: output file, provenance, progress.
 *
 * The sandbox opens base (without dofile, loadfile, load of binary chunks), string, table,
 * math, utf8, and a reduced os (clock, time, date, getenv is absent).  `require` resolves
 * "dkv" and Lua files under the project's scripts/ and experiments/ folders and the script's
 * own folder, nothing else.  A count hook stops scripts after instr_limit VM instructions or on
 * SIGINT (dkv_interrupt_requested); the allocator refuses to grow past mem_limit_bytes.
 *
 *     dkv_lua_config cfg = dkv_lua_config_default();
 *     cfg.root = "/path/to/dkv"; cfg.output_path = "out.h5";
 *     dkv_lua *s; dkv_err err = {0};
 *     if (dkv_lua_new(&cfg, &s, &err) == DKV_OK && dkv_lua_run_file(s, "exp.lua", &err) != DKV_OK)
 *         fprintf(stderr, "%s\n", dkv_lua_traceback(s));
 *     dkv_lua_close(s, &err);     // closes (and renames) the output file
 */
#ifndef DKV_LUA_DKV_LUA_H
#define DKV_LUA_DKV_LUA_H

#include <lua.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/h5.h"
#include "model/model.h"
#include "util/status.h"

/* Progress of a long operation: `done` of `total` units (total <= 0: unknown).  label is
 * borrowed for the call.  done == total marks the end of that operation.  label NULL: the
 * script is about to print to stdout (a terminal bar should clear itself). */
typedef void (*dkv_progress_fn)(void *ud, const char *label, double done, double total);

typedef struct dkv_lua_config {
    const char *root;              /* project root (scripts/, experiments/, datasets/); NULL: "." */
    const char *output_path;       /* results file, created on first use; NULL: no output */
    const char *const *params;     /* "name=value" strings for dkv.params (borrowed) */
    size_t nparams;
    uint32_t shard_index;          /* dkv.shard = {index = i, count = N}, 0 <= i < N */
    uint32_t shard_count;          /* 1 when not sharded */
    uint64_t instr_limit;          /* VM instructions per script; 0 = unlimited */
    double time_limit_s;           /* CPU seconds of Lua run time per script, not counting time
                                    * inside dkv's long calls (dkv.simulate, dkv.execute, dkv.save,
                                    * dkv.write_run, dkv.mem.requests); 0 = unlimited */
    size_t mem_limit_bytes;        /* Lua heap cap; 0 = unlimited */
    dkv_progress_fn progress;      /* may be NULL */
    void *progress_ud;
    void (*notice)(void *ud, const char *msg);   /* things the user should know that are not
                                                  * errors (lenient reading skipped lines); the
                                                  * CLI prints them on stderr.  May be NULL */
    void *notice_ud;
    bool list_params;              /* `dkv run SCRIPT --help`: run the script only until its first
                                    * dkv.simulate/execute/write_run/save/mem.new, with print off,
                                    * to collect its dkv.param declarations (dkv_lua_params_help) */
} dkv_lua_config;

/* Defaults: root ".", no output, shard 0/1, instr_limit 1e11 (minutes of work), 10 s of Lua run
 * time, 4 GiB heap. */
#define DKV_LUA_DEFAULT_INSTR_LIMIT 100000000000ULL
#define DKV_LUA_DEFAULT_TIME_LIMIT_S 10.0
#define DKV_LUA_DEFAULT_MEM_LIMIT ((size_t)4 << 30)
#define DKV_LUA_TOSTRING_MAX (64u << 10)   /* print() cuts a __tostring result longer than this */
#define DKV_LUA_ERRMSG_MAX (16u << 10)     /* an error message longer than this is cut */
dkv_lua_config dkv_lua_config_default(void);

typedef struct dkv_lua dkv_lua;

/* Creates the sandbox (copies cfg and its strings).  *out is freed by dkv_lua_close. */
dkv_status dkv_lua_new(const dkv_lua_config *cfg, dkv_lua **out, dkv_err *err);

/* Runs a script file (its text is kept as provenance; its folder joins the require path).
 * On error: DKV_EINVAL for a load (syntax) error, DKV_EINTR when interrupted, DKV_ERANGE when
 * the instruction limit was hit, DKV_ENOMEM for the memory cap, DKV_EFORMAT for a runtime
 * error; err holds the one-line message ("file:line: ..."), dkv_lua_traceback the full one. */
dkv_status dkv_lua_run_file(dkv_lua *s, const char *path, dkv_err *err);
/* The same for a string (chunkname e.g. "=test"). */
dkv_status dkv_lua_run_string(dkv_lua *s, const char *chunkname, const char *code, dkv_err *err);

/* True when the last run failed on a usage error: a -D name the script does not know, or a -D
 * value of the wrong type for its dkv.param (the CLI exits 2). */
bool dkv_lua_usage_error(const dkv_lua *s);

/* The parameters the script declared (dkv.param) or read (dkv.params), one line each:
 * "  name  default  help".  Caller frees.  Call after dkv_lua_run_file. */
char *dkv_lua_params_help(dkv_lua *s);

/* Checks a GPU preset file given by path (core/lua/file_check.c): text (no NUL byte), a Lua data
 * file returning a table (loaded with math only, text mode), whose fields pass the preset checks
 * (`base` names a preset of the sandbox's root).  *out (may be NULL) gets the preset.  Errors
 * name the file and, where one exists, the line or the field. */
dkv_status dkv_lua_check_gpu_file(dkv_lua *s, const char *path, dkv_gpu *out, dkv_err *err);

/* The last error with its traceback ("" when none).  Borrowed until the next run. */
const char *dkv_lua_traceback(const dkv_lua *s);

/* Closes the interpreter and the output file (ending an open run, renaming .tmp).  Accepts NULL. */
dkv_status dkv_lua_close(dkv_lua *s, dkv_err *err);

/* Closes the interpreter (its __gc handlers may still write) and hands the output file to the
 * caller, who decides whether to commit it (dkv_h5_close) or keep it aside
 * (dkv_h5_close_uncommitted): NULL when the script wrote no run.  Only dkv_lua_close,
 * dkv_lua_runs_written and dkv_lua_traceback may be called on s afterwards. */
dkv_h5 *dkv_lua_take_output(dkv_lua *s);

lua_State *dkv_lua_state(dkv_lua *s);
/* The sandbox that owns L, or NULL for a plain lua_State. */
dkv_lua *dkv_lua_from_state(lua_State *L);

/* Project root of the sandbox owning L ("." for a plain lua_State).  Borrowed. */
const char *dkv_lua_root(lua_State *L);

/* A data file a script names (a trace, a prompts file): as given when it is absolute or readable from the current
 * folder, else under the project root when it is readable there (buf, n bytes), else as given (the reader's error
 * then names it).  So the shipped experiments run from any folder. */
const char *dkv_lua_data_path(lua_State *L, const char *file, char *buf, size_t n);

/* Output path (after shard naming), or NULL. */
const char *dkv_lua_output_path(const dkv_lua *s);
/* Number of runs written so far to the output file. */
size_t dkv_lua_runs_written(const dkv_lua *s);

/* ------------------------------------------------------------------ for bindings (raise Lua errors) */

/* Marks the running script interrupted (a binding's long work saw SIGINT or SIGTERM): the stop is sticky, so a pcall
 * around the binding cannot make a success of it; the script ends interrupted at its next instructions or, at the
 * latest, when it returns (its completed runs kept aside, the output file untouched).  No-op for a plain lua_State. */
void dkv_lua_mark_interrupted(lua_State *L);

/* The output file of the running script, created on first call; NULL when there is none. */
dkv_h5 *dkv_lua_output(lua_State *L);

/* Begins run `name` in the output file and writes the provenance attributes: dkv_version,
 * git_commit, script, script_path, params (the -D values, Lua literal), config (the table at
 * cfg_idx as a Lua literal, or "{}" when cfg_idx is 0, and flat in group "config"), seed, host,
 * start_time (ISO 8601 UTC), build (release|debug|asan), backend = "none", status = "incomplete".  Returns NULL (doing nothing) when there is no output file.
 * Raises a Lua error when the run cannot be created (e.g. duplicate name).  A run left open by
 * an earlier error (begin without end) is ended first with status = "failed"; a run still open
 * when the script ends keeps status = "incomplete" (e.g. after SIGINT). */
dkv_h5_run *dkv_lua_run_begin(lua_State *L, const char *name, int cfg_idx, uint64_t seed);
/* What produced a run (docs/HDF5_SCHEMA.md, "Run attributes"): backend "sim" (dkv.simulate),
 * "cuda" (dkv.execute) or "none" (written by the script: dkv.write_run, m:write); device: the
 * CUDA device as probed, or the simulated GPU's name; driver: "driver X.Y, runtime X.Y" on CUDA,
 * "" otherwise; the GPU and model presets the configuration named ("" when given inline); the
 * cost profile: "measured" (cuda), "calibrated: N kernel classes" (a sim preset with per-class
 * costs from dkv calibrate), "roofline" (sim without), "" (no engine); gpu_expected_error: the simulated GPU
 * preset's expected_error ("" on a measured run, or a preset without one). */
typedef struct dkv_run_origin {
    const char *backend, *device, *driver, *gpu_preset, *model_preset, *cost_profile, *gpu_expected_error;
} dkv_run_origin;

/* Writes the origin as run attributes (replacing run_begin's backend = "none").  Accepts NULL run. */
void dkv_lua_run_origin(lua_State *L, dkv_h5_run *run, const dkv_run_origin *o);

/* Writes the table at idx as flat typed attributes of group obj of the run: nested sections
 * joined with '.' ("policies.offload.t1"); integers int64, other numbers float64, booleans
 * int64 0/1, strings strings, arrays of numbers 1-D float64 arrays; any other value (arrays of
 * tables, functions) its Lua literal as a string.  Raises a Lua error when writing fails. */
void dkv_lua_write_flat(lua_State *L, dkv_h5_run *run, const char *obj, int idx);

/* Stamps end_time and status = "complete", ends the run (flushes).  Accepts NULL. */
void dkv_lua_run_end(lua_State *L, dkv_h5_run *run);

/* Reports progress to the CLI's callback (no-op without one). */
void dkv_lua_progress(lua_State *L, const char *label, double done, double total);

/* Pushes a string: the value at idx as a Lua literal (tables with sorted keys, numbers with
 * full precision; functions/userdata as quoted "<type>"), nested at most 32 deep. */
void dkv_lua_push_literal(lua_State *L, int idx);

/* The `dkv` module (what require "dkv" returns). */
int luaopen_dkv(lua_State *L);

#endif
