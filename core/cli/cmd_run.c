/* cmd_run.c - `dkv run SCRIPT.lua [-o FILE.h5] [-D name=value ...] [--shard i/N] [limits]`. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
            "  -D name=value          a parameter, seen by the script as dkv.params.name (numbers and\n"
            "                         true/false are converted); repeatable\n"
            "  --shard i/N            this process runs shard i of N (0 <= i < N); scripts pick their\n"
            "                         part of a sweep with dkv.shard.select(list)\n"
            "  --instr-limit N        stop the script after N Lua VM instructions (default %llu; 0 = none)\n"
            "  --mem-limit SIZE       Lua heap cap, e.g. 512M, 4G (default %zuM; 0 = none)\n"
            "  --root DIR             project root (scripts/, experiments/, datasets/presets/);\n"
            "                         default: $DKV_ROOT, else found from the dkv executable\n"
            "  -q, --quiet            no progress bar\n"
            "  -h, --help             this text\n"
            "\n"
            "exit status: 0 success, 1 script error or interrupted (completed runs are kept), 2 usage\n",
            (unsigned long long)DKV_LUA_DEFAULT_INSTR_LIMIT, DKV_LUA_DEFAULT_MEM_LIMIT >> 20);
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Project root: $DKV_ROOT, else the nearest folder above the executable holding datasets/presets,
 * else ".". */
static void find_root(char *out, size_t n)
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
    if (errno || end == s || v < 0)
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
    if (*end)
        return -1;
    *out = (size_t)(v * mul);
    return 0;
}

static void on_sigint(int sig)
{
    (void)sig;
    dkv_interrupt_request();
}

int dkv_cmd_run(int argc, char **argv)
{
    const char *script = NULL, *output = NULL, *root_opt = NULL;
    char **params = calloc((size_t)argc + 1, sizeof *params);
    size_t nparams = 0;
    dkv_lua_config cfg = dkv_lua_config_default();
    bool quiet = false;
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
            run_usage(stdout);
            rc = DKV_EXIT_OK;
            goto out;
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
            const char *eq = strchr(kv, '=');
            if (!eq || eq == kv) {
                fprintf(stderr, "dkv run: -D expects name=value, got '%s'\n", kv);
                goto out;
            }
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
        } else if (strcmp(a, "--instr-limit") == 0) {
            NEED_ARG();
            char *end;
            errno = 0;
            unsigned long long v = strtoull(argv[++i], &end, 10);
            if (errno || *end || argv[i][0] == '-') {
                fprintf(stderr, "dkv run: --instr-limit expects a count, got '%s'\n", argv[i]);
                goto out;
            }
            cfg.instr_limit = v;
        } else if (strcmp(a, "--mem-limit") == 0) {
            NEED_ARG();
            if (parse_size(argv[++i], &cfg.mem_limit_bytes) != 0) {
                fprintf(stderr, "dkv run: --mem-limit expects a size such as 512M or 4G, got '%s'\n", argv[i]);
                goto out;
            }
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
    if (!script) {
        fprintf(stderr, "dkv run: no script given (usage: dkv run SCRIPT.lua [-o FILE.h5])\n");
        goto out;
    }
    char root[PATH_MAX], defout[PATH_MAX];
    if (root_opt)
        snprintf(root, sizeof root, "%s", root_opt);
    else
        find_root(root, sizeof root);
    if (!output) {
        const char *base = strrchr(script, '/');
        base = base ? base + 1 : script;
        size_t len = strlen(base);
        if (len > 4 && strcmp(base + len - 4, ".lua") == 0)
            len -= 4;
        if (cfg.shard_count > 1)
            snprintf(defout, sizeof defout, "results/%.*s.shard%uof%u.h5", (int)len, base, cfg.shard_index,
                     cfg.shard_count);
        else
            snprintf(defout, sizeof defout, "results/%.*s.h5", (int)len, base);
        output = defout;
    }
    dkv_cli_progress bar;
    dkv_cli_progress_init(&bar, quiet);
    cfg.root = root;
    cfg.output_path = output;
    cfg.params = (const char *const *)params;
    cfg.nparams = nparams;
    cfg.progress = dkv_cli_progress_cb;
    cfg.progress_ud = &bar;

    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND;  /* a second Ctrl-C kills the process */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);

    dkv_err err = {0};
    dkv_lua *s = NULL;
    rc = DKV_EXIT_ERROR;
    if (dkv_lua_new(&cfg, &s, &err) != DKV_OK) {
        fprintf(stderr, "dkv run: %s\n", err.msg);
        goto out_sig;
    }
    dkv_status st = dkv_lua_run_file(s, script, &err);
    dkv_cli_progress_end(&bar);
    if (st == DKV_OK) {
        rc = DKV_EXIT_OK;
    } else if (st == DKV_ENOENT) {
        fprintf(stderr, "dkv run: %s\n", err.msg);
    } else {
        const char *tb = dkv_lua_traceback(s);
        fprintf(stderr, "%s\n", *tb ? tb : err.msg);
    }
    size_t nruns = dkv_lua_runs_written(s);
    dkv_err cerr = {0};
    if (dkv_lua_close(s, &cerr) != DKV_OK) {
        fprintf(stderr, "dkv run: %s\n", cerr.msg);
        rc = DKV_EXIT_ERROR;
    }
    if (st == DKV_EINTR || (st != DKV_OK && nruns > 0))
        fprintf(stderr, "dkv run: %s; %zu completed run%s kept in %s\n",
                st == DKV_EINTR ? "interrupted" : "stopped by an error", nruns, nruns == 1 ? "" : "s", output);
out_sig:
    sigaction(SIGINT, &old, NULL);
out:
    free(params);
    return rc;
}
