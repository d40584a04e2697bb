/* cmd_run.c - `dkv run SCRIPT.lua [-o FILE.h5] [-D name=value ...] [--shard i/N] [limits]`. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/progress.h"
#include "lua/dkv_lua.h"
#include "util/interrupt.h"

static void run_usage(FILE *out)
{
    fprintf(out,
            "usage: dkv run SCRIPT.lua [options]\n"
            "\n"
            "  -o, --output FILE.h5   results file (default results/<script>.h5, or\n"
            "                         results/<script>.shard<i>of<N>.h5 with --shard); created when\n"
            "                         the script writes its first run\n"
            "  -D name=value          a parameter the script declares with dkv.param(name, default, help)\n"
            "                         (numbers and true/false are converted); repeatable; a name the\n"
            "                         script does not know is an error (exit 2)\n"
            "  --shard i/N            this process runs shard i of N (0 <= i < N); scripts pick their\n"
            "                         part of a sweep with dkv.shard.select(list)\n"
            "  --time-limit SECONDS   stop the script after this much Lua CPU time (default %g s; 0 =\n"
            "                         none); time inside dkv.simulate, dkv.execute, dkv.save,\n"
            "                         dkv.write_run and dkv.mem.requests does not count\n"
            "  --instr-limit N        stop the script after N Lua VM instructions (default %llu; 0 = none)\n"
            "  --mem-limit SIZE       Lua heap cap, e.g. 512M, 4G (default %zuM; 0 = none)\n"
            "  --root DIR             project root (scripts/, experiments/, datasets/presets/);\n"
            "                         default: $DKV_ROOT, else found from the dkv executable\n"
            "  -q, --quiet            no progress bar\n"
            "  -h, --help             this text; after SCRIPT.lua: the script's parameters, with\n"
            "                         defaults and help\n"
            "\n"
            "The results are written to FILE.h5.tmp and replace FILE.h5 only when the script succeeds.\n"
            "A failed or interrupted run leaves FILE.h5 untouched and keeps its completed runs in\n"
            "FILE.h5.partial (the message names it); a FILE.h5.tmp left by a killed run is moved aside\n"
            "the same way, never overwritten.  A FILE.h5 that is a folder, or a file that is not an HDF5\n"
            "file (the script itself, a trace, notes), is refused before the script starts.\n"
            "\n"
            "Ctrl-C (SIGINT) or SIGTERM stops the script at its next check, keeping completed runs; a\n"
            "second one kills dkv at once.\n"
            "\n"
            "exit status: 0 success, 1 script error or interrupted (completed runs are kept), 2 usage\n",
            DKV_LUA_DEFAULT_TIME_LIMIT_S, (unsigned long long)DKV_LUA_DEFAULT_INSTR_LIMIT,
            DKV_LUA_DEFAULT_MEM_LIMIT >> 20);
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Project root: $DKV_ROOT, else the nearest folder above the executable holding datasets/presets,
 * else ".". */
void dkv_cli_find_root(char *out, size_t n)
{
    const char *env = getenv("DKV_ROOT");
    if (env && *env) {
        snprintf(out, n, "%s", env);
        return;
    }
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        for (int up = 0; up < 6; up++) {
            char *slash = strrchr(exe, '/');
            if (!slash || slash == exe)
                break;
            *slash = '\0';
            char probe[PATH_MAX + 32];
            snprintf(probe, sizeof probe, "%s/datasets/presets", exe);
            if (is_dir(probe)) {
                snprintf(out, n, "%s", exe);
                return;
            }
        }
    }
    snprintf(out, n, ".");
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0)   /* nan, inf and 1e400 are not sizes */
        return -1;
    double mul = 1 << 20;  /* plain numbers are MiB */
    if (*end == 'K' || *end == 'k')
        mul = 1 << 10, end++;
    else if (*end == 'M' || *end == 'm')
        mul = 1 << 20, end++;
    else if (*end == 'G' || *end == 'g')
        mul = (double)(1u << 30), end++;
    else if (*end == 'B' || *end == 'b')
        mul = 1, end++;
    if (*end == 'i')
        end++;
    if (*end == 'B')
        end++;
    if (*end || v * mul >= 0x1p62)   /* 4 EiB: past it the cast to size_t is undefined */
        return -1;
    *out = (size_t)(v * mul);
    return 0;
}

static bool file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* dkv_h5_count_complete in a child process: a file damaged by a failed write can crash or hang
 * libhdf5, which must not take this process (and the message about the old file) with it. */
static bool count_safely(const char *path, size_t *complete, size_t *total, char *why, size_t why_n)
{
    struct { size_t complete, total; int ok; char msg[DKV_ERR_MSG_MAX]; } r;
    memset(&r, 0, sizeof r);
    int fd[2];
    fflush(NULL);
    if (pipe(fd) != 0) {
        snprintf(why, why_n, "pipe: %s", strerror(errno));
        return false;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        alarm(30);
        dkv_err err = {0};
        r.ok = dkv_h5_count_complete(path, &r.complete, &r.total, &err) == DKV_OK;
        snprintf(r.msg, sizeof r.msg, "%s", err.msg);
        ssize_t w = write(fd[1], &r, sizeof r);
        _exit(w == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fd[1]);
    ssize_t n = pid > 0 ? read(fd[0], &r, sizeof r) : -1;
    close(fd[0]);
    int wst = 0;
    if (pid > 0)
        waitpid(pid, &wst, 0);
    if (n != (ssize_t)sizeof r) {
        snprintf(why, why_n, "%s", pid < 0 ? "fork failed"
                                 : WIFSIGNALED(wst) ? "reading it crashed or hung libhdf5"
                                                    : "reading it failed");
        return false;
    }
    *complete = r.complete;
    *total = r.total;
    snprintf(why, why_n, "%s", r.msg);
    return r.ok != 0;
}

/* Moves the results of a run that did not finish to "<output>.partial[.N]" and says so.  what:
 * why they are partial ("interrupted", "stopped by an error").  Returns the number of complete
 * runs found in the file (read back, not assumed). */
static size_t keep_partial(const char *tmp, const char *output, const char *what, bool damaged)
{
    size_t complete = 0, total = 0;
    char why[DKV_ERR_MSG_MAX];
    bool readable = count_safely(tmp, &complete, &total, why, sizeof why);
    char kept[PATH_MAX + 64];
    if (readable && complete == 0) {   /* our own file without a complete run: nothing to keep */
        remove(tmp);
        fprintf(stderr, "dkv run: %s; no run was completed%s%s%s\n", what, file_exists(output) ? " ('" : "",
                file_exists(output) ? output : "", file_exists(output) ? "' is unchanged)" : "");
        return 0;
    }
    dkv_err aerr = {0};
    if (dkv_h5_set_aside(tmp, output, ".partial", kept, sizeof kept, &aerr) != DKV_OK) {
        fprintf(stderr, "dkv run: %s; the partial results stay in '%s' (%s)\n", what, tmp, aerr.msg);
        return readable ? complete : 0;
    }
    const char *old = file_exists(output) ? "; '" : "", *old2 = file_exists(output) ? "' is unchanged" : "";
    if (!readable)
        fprintf(stderr, "dkv run: %s; the partial results file could not be read back (%s); it is kept as '%s'%s%s%s\n",
                what, why, kept, old, file_exists(output) ? output : "", old2);
    else
        fprintf(stderr, "dkv run: %s; %zu completed run%s kept in %s%s%s%s%s\n", what, complete,
                complete == 1 ? "" : "s", kept, old, file_exists(output) ? output : "", old2,
                damaged ? " (read back after a failed write: check them with dkv info)" : "");
    return readable ? complete : 0;
}

/* A "<output>.tmp" left by a run that was killed is moved aside, never overwritten. */
static int set_aside_leftover(const char *output)
{
    char tmp[PATH_MAX + 8], kept[PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s.tmp", output);
    struct stat st;
    if (lstat(tmp, &st) != 0)
        return 0;
    int fd = open(tmp, O_RDONLY);   /* libhdf5 holds a lock on a file it is writing */
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
        close(fd);
        fprintf(stderr, "dkv run: '%s' is being written by another process (a dkv run with the same -o?); it is "
                        "left alone: wait for it or choose another -o\n", tmp);
        return -1;
    }
    if (fd >= 0)
        close(fd);   /* (closing drops the lock) */
    size_t complete = 0, total = 0;
    char why[DKV_ERR_MSG_MAX];
    bool readable = count_safely(tmp, &complete, &total, why, sizeof why);
    dkv_err err = {0};
    if (dkv_h5_set_aside(tmp, output, ".partial", kept, sizeof kept, &err) != DKV_OK) {
        fprintf(stderr, "dkv run: '%s' was left by an earlier run that did not finish, and %s\n", tmp, err.msg);
        return -1;
    }
    if (readable)
        fprintf(stderr, "dkv run: '%s' was left by an earlier run that did not finish (killed?); its %zu "
                "complete run%s kept in %s\n", tmp, complete, complete == 1 ? " is" : "s are", kept);
    else
        fprintf(stderr, "dkv run: '%s' was left by an earlier run that did not finish (killed?); it is not "
                "readable as a results file (%s) and is kept as %s\n", tmp, why, kept);
    return 0;
}

/* The output folder must be writable before an experiment spends time on its first run. */
static int check_output_dir(const char *output)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", output);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if (is_dir(dir) && access(dir, W_OK) != 0) {
        fprintf(stderr, "dkv run: cannot write results to '%s': folder '%s': %s\n", output, dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* Commits the output of a script that succeeded, or keeps a failed one's completed runs aside.
 * Returns the exit status. */
static int finish_output(dkv_h5 *out, const char *output, dkv_status st, int rc)
{
    const char *what = st == DKV_EINTR ? "interrupted" : "stopped by an error";
    dkv_err cerr = {0};
    char *tmp = NULL;
    if (!out) {
        if (st != DKV_OK)
            fprintf(stderr, "dkv run: %s; no run was completed%s%s%s\n", what, file_exists(output) ? " ('" : "",
                    file_exists(output) ? output : "", file_exists(output) ? "' is unchanged)" : "");
        return rc;
    }
    if (st == DKV_OK) {
        char tmpname[PATH_MAX + 8];
        snprintf(tmpname, sizeof tmpname, "%s.tmp", output);
        if (dkv_h5_close(out, &cerr) == DKV_OK)
            return rc;
        fprintf(stderr, "dkv run: %s\n", cerr.msg);
        if (file_exists(tmpname))
            keep_partial(tmpname, output, "the results file could not be completed", true);
        return DKV_EXIT_ERROR;
    }
    bool damaged = dkv_h5_close_uncommitted(out, &tmp, &cerr) != DKV_OK;
    if (damaged)
        fprintf(stderr, "dkv run: %s\n", cerr.msg);
    if (tmp && file_exists(tmp))
        keep_partial(tmp, output, what, damaged);
    free(tmp);
    return DKV_EXIT_ERROR;
}

/* `dkv run SCRIPT --help`: the script runs until it starts work, with print off and no output
 * file, and its declared parameters are listed. */
static int list_params(const char *script, const char *root, dkv_lua_config *cfg, const char *const *params,
                       size_t nparams)
{
    cfg->root = root;
    cfg->output_path = NULL;
    cfg->params = params;
    cfg->nparams = nparams;
    cfg->list_params = true;
    dkv_err err = {0};
    dkv_lua *s = NULL;
    if (dkv_lua_new(cfg, &s, &err) != DKV_OK) {
        fprintf(stderr, "dkv run: %s\n", err.msg);
        return DKV_EXIT_ERROR;
    }
    int rc = DKV_EXIT_OK;
    dkv_status st = dkv_lua_run_file(s, script, &err);
    if (st != DKV_OK) {
        const char *tb = dkv_lua_traceback(s);
        fprintf(stderr, "dkv run: %s\n", *tb ? tb : err.msg);
        rc = dkv_lua_usage_error(s) ? DKV_EXIT_USAGE : DKV_EXIT_ERROR;
    } else {
        char *text = dkv_lua_params_help(s);
        printf("usage: dkv run %s [-D name=value ...] [options]   (dkv run --help: the options)\n\n", script);
        if (text && *text)
            printf("parameters of %s (-D name=value):\n  %-14s %-18s %s\n%s", script, "name", "default", "meaning",
                   text);
        else
            printf("%s declares no parameters (dkv.param) and reads none from dkv.params\n", script);
        free(text);
    }
    dkv_lua_close(s, NULL);
    return rc;
}

static void print_notice(void *ud, const char *msg)
{
    (void)ud;
    fprintf(stderr, "dkv run: %s\n", msg);
}

/* A -D value: name=value, its name not given before (-D n=1 -D n=2 is a mistake, not "the last one wins"). */
static bool param_ok(const char *kv, const char *const *params, size_t nparams)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) {
        fprintf(stderr, "dkv run: -D expects name=value, got '%s'\n", kv);
        return false;
    }
    for (size_t k = 0; k < nparams; k++)
        if (strncmp(params[k], kv, (size_t)(eq - kv) + 1) == 0) {
            fprintf(stderr, "dkv run: -D %.*s is given twice ('%s', then '%s')\n", (int)(eq - kv), kv, params[k], kv);
            return false;
        }
    return true;
}

/* Runs the script and settles its output file (committed, or kept aside); the exit status. */
static int run_script(const char *script, const char *output, const dkv_lua_config *cfg, dkv_cli_progress *bar)
{
    dkv_err err = {0};
    dkv_lua *s = NULL;
    int rc = DKV_EXIT_ERROR;
    if (dkv_h5_output_ok(output, &err) != DKV_OK) {
        fprintf(stderr, "dkv run: -o %s\n", err.msg);
        return DKV_EXIT_USAGE;
    }
    if (check_output_dir(output) != 0 || set_aside_leftover(output) != 0)
        return rc;
    if (dkv_lua_new(cfg, &s, &err) != DKV_OK) {
        fprintf(stderr, "dkv run: %s\n", err.msg);
        return rc;
    }
    dkv_status st = dkv_lua_run_file(s, script, &err);
    dkv_cli_progress_end(bar);
    bool usage = dkv_lua_usage_error(s);
    if (st == DKV_OK) {
        rc = DKV_EXIT_OK;
    } else if (usage) {
        fprintf(stderr, "dkv run: %s\n", dkv_lua_traceback(s));
    } else if (st == DKV_ENOENT) {
        fprintf(stderr, "dkv run: %s\n", err.msg);
    } else {
        const char *tb = dkv_lua_traceback(s);
        fprintf(stderr, "%s\n", *tb ? tb : err.msg);
    }
    dkv_h5 *out_file = dkv_lua_take_output(s);
    if (!(usage && !out_file))   /* a usage error before the first run: nothing to say about files */
        rc = finish_output(out_file, output, st, rc);
    if (usage)
        rc = DKV_EXIT_USAGE;
    dkv_lua_close(s, NULL);
    return rc;
}

/* --instr-limit N, --time-limit SECONDS, --mem-limit SIZE into cfg; -1 (with a message) when bad. */
static int parse_limit(const char *opt, const char *v, dkv_lua_config *cfg)
{
    char *end;
    errno = 0;
    if (strcmp(opt, "--instr-limit") == 0) {
        unsigned long long n = strtoull(v, &end, 10);
        if (errno || end == v || *end || v[0] == '-') {
            fprintf(stderr, "dkv run: --instr-limit expects a count, got '%s'\n", v);
            return -1;
        }
        cfg->instr_limit = n;
    } else if (strcmp(opt, "--time-limit") == 0) {
        double t = strtod(v, &end);
        if (errno || end == v || *end || !(t >= 0) || t > 1e9) {
            fprintf(stderr, "dkv run: --time-limit expects seconds (0 = none), got '%s'\n", v);
            return -1;
        }
        cfg->time_limit_s = t;
    } else if (parse_size(v, &cfg->mem_limit_bytes) != 0) {
        fprintf(stderr, "dkv run: --mem-limit expects a size such as 512M or 4G, got '%s'\n", v);
        return -1;
    }
    return 0;
}

/* SIGINT (Ctrl-C) and SIGTERM (kill, Slurm's time limit) stop the script at its next check; the
 * completed runs are kept.  A second one kills the process (SA_RESETHAND). */
static void on_sigint(int sig)
{
    dkv_interrupt_request_signal(sig);
}

/* results/<script name>.h5 (results/<name>.shard<i>of<N>.h5 for a shard). */
static void default_output(const char *script, const dkv_lua_config *cfg, char *out, size_t size)
{
    const char *base = strrchr(script, '/');
    base = base ? base + 1 : script;
    size_t len = strlen(base);
    if (len > 4 && strcmp(base + len - 4, ".lua") == 0)
        len -= 4;
    if (cfg->shard_count > 1)
        snprintf(out, size, "results/%.*s.shard%uof%u.h5", (int)len, base, cfg->shard_index, cfg->shard_count);
    else
        snprintf(out, size, "results/%.*s.h5", (int)len, base);
}

int dkv_cmd_run(int argc, char **argv)
{
    const char *script = NULL, *output = NULL, *root_opt = NULL;
    char **params = calloc((size_t)argc + 1, sizeof *params);
    size_t nparams = 0;
    dkv_lua_config cfg = dkv_lua_config_default();
    bool quiet = false, help = false;
    int rc = DKV_EXIT_USAGE;
    if (!params)
        return DKV_EXIT_ERROR;
#define NEED_ARG()                                                               \
    do {                                                                         \
        if (i + 1 >= argc) {                                                     \
            fprintf(stderr, "dkv run: option %s needs a value\n", a);            \
            goto out;                                                            \
        }                                                                        \
    } while (0)
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            help = true;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            NEED_ARG();
            output = argv[++i];
        } else if (strncmp(a, "-o", 2) == 0 && a[2]) {
            output = a + 2;
        } else if (strcmp(a, "-D") == 0 || (strncmp(a, "-D", 2) == 0 && a[2])) {
            const char *kv = a[2] ? a + 2 : NULL;
            if (!kv) {
                NEED_ARG();
                kv = argv[++i];
            }
            if (!param_ok(kv, (const char *const *)params, nparams))
                goto out;
            params[nparams++] = (char *)kv;
        } else if (strcmp(a, "--shard") == 0) {
            NEED_ARG();
            unsigned si, sn;
            char extra;
            if (sscanf(argv[++i], "%u/%u%c", &si, &sn, &extra) != 2 || sn == 0 || si >= sn) {
                fprintf(stderr, "dkv run: --shard expects i/N with 0 <= i < N, got '%s'\n", argv[i]);
                goto out;
            }
            cfg.shard_index = si;
            cfg.shard_count = sn;
        } else if (strcmp(a, "--instr-limit") == 0 || strcmp(a, "--time-limit") == 0 ||
                   strcmp(a, "--mem-limit") == 0) {
            NEED_ARG();
            if (parse_limit(a, argv[++i], &cfg) != 0)
                goto out;
        } else if (strcmp(a, "--root") == 0) {
            NEED_ARG();
            root_opt = argv[++i];
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = true;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "dkv run: unknown option '%s' (try dkv run --help)\n", a);
            goto out;
        } else if (!script) {
            script = a;
        } else {
            fprintf(stderr, "dkv run: unexpected argument '%s' (one script per run)\n", a);
            goto out;
        }
    }
#undef NEED_ARG
    if (help && !script) {
        run_usage(stdout);
        rc = DKV_EXIT_OK;
        goto out;
    }
    if (!script) {
        fprintf(stderr, "dkv run: no script given (usage: dkv run SCRIPT.lua [-o FILE.h5])\n");
        goto out;
    }
    char root[PATH_MAX], defout[PATH_MAX];
    if (root_opt)
        snprintf(root, sizeof root, "%s", root_opt);
    else
        dkv_cli_find_root(root, sizeof root);
    if (!output) {
        default_output(script, &cfg, defout, sizeof defout);
        output = defout;
    }
    if (help) {
        rc = list_params(script, root, &cfg, (const char *const *)params, nparams);
        goto out;
    }
    dkv_cli_progress bar;
    dkv_cli_progress_init(&bar, quiet);
    cfg.root = root;
    cfg.output_path = output;
    cfg.params = (const char *const *)params;
    cfg.nparams = nparams;
    cfg.progress = dkv_cli_progress_cb;
    cfg.progress_ud = &bar;
    cfg.notice = print_notice;

    struct sigaction sa, old, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND;  /* a second Ctrl-C kills the process */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    sigaction(SIGTERM, &sa, &old_term);

    rc = run_script(script, output, &cfg, &bar);
    sigaction(SIGINT, &old, NULL);
    sigaction(SIGTERM, &old_term, NULL);
out:
    free(params);
    return rc;
}
