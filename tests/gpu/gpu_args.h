/* gpu_args.h - the command-line options of the GPU programs that take them (test_backend_run,
 * test_multi_instances): "--name value" pairs, each value taken whole.  A number that does not parse
 * or is out of its range, a choice not in its list, a name without its value or an unknown name is an
 * error naming the option and the value, with the usage, exit status 2 (before any GPU is looked for,
 * so that a mistake is reported on a machine without one too); -h or --help prints the usage, exit 0.
 * The microbenchmarks that take one optional flag use gpu_args_flag. */
#ifndef DKV_TESTS_GPU_ARGS_H
#define DKV_TESTS_GPU_ARGS_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gpu_args {
    const char *prog, *usage;   /* the program's name, its usage lines */
    int argc, i;
    char **argv;
} gpu_args;

/* The options of argv; -h or --help anywhere in them prints the usage and exits 0. */
static inline gpu_args gpu_args_start(const char *prog, const char *usage, int argc, char **argv)
{
    for (int j = 1; j < argc; j++)
        if (!strcmp(argv[j], "-h") || !strcmp(argv[j], "--help")) {
            printf("usage:\n%s", usage);
            exit(0);
        }
    return (gpu_args){.prog = prog, .usage = usage, .argc = argc, .i = 1, .argv = argv};
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3), noreturn))
#endif
static inline void gpu_args_fail(const gpu_args *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", a->prog);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage:\n%s", a->usage);
    exit(2);
}

/* The next option's name and value; false after the last. */
static inline bool gpu_args_next(gpu_args *a, const char **name, const char **value)
{
    if (a->i >= a->argc)
        return false;
    *name = a->argv[a->i];
    if (strncmp(*name, "--", 2) != 0)
        gpu_args_fail(a, "'%s' is not an option (--name value)", *name);
    if (a->i + 1 >= a->argc)
        gpu_args_fail(a, "%s wants a value", *name);
    *value = a->argv[a->i + 1];
    a->i += 2;
    return true;
}

/* A whole number in [lo, hi]. */
static inline uint64_t gpu_args_uint(const gpu_args *a, const char *name, const char *v, uint64_t lo, uint64_t hi)
{
    char *end = NULL;
    errno = 0;
    unsigned long long x = v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
    if (!end || *end || errno || x < lo || x > hi)
        gpu_args_fail(a, "%s: '%s' is not a whole number from %llu to %llu", name, v, (unsigned long long)lo,
                      (unsigned long long)hi);
    return x;
}

/* A number in (lo, hi] when lo_open, else [lo, hi]. */
static inline double gpu_args_real(const gpu_args *a, const char *name, const char *v, double lo, bool lo_open,
                                   double hi)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno || !(x == x) || (lo_open ? !(x > lo) : !(x >= lo)) || !(x <= hi))
        gpu_args_fail(a, "%s: '%s' is not a number in %c%g, %g]", name, v, lo_open ? '(' : '[', lo, hi);
    return x;
}

/* One of the NULL-terminated choices: its index. */
static inline int gpu_args_choice(const gpu_args *a, const char *name, const char *v, const char *const *choices)
{
    char list[256] = "";
    for (int k = 0; choices[k]; k++) {
        if (!strcmp(v, choices[k]))
            return k;
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", choices[k]);
    }
    gpu_args_fail(a, "%s: '%s' is not one of %s", name, v, list);
}

/* Whether the program's one optional argument, flag, was given: no argument is false; --help prints the usage and
 * exits 0; anything else (a misspelt flag, a second argument) is an error, exit 2. */
static inline bool gpu_args_flag(int argc, char **argv, const char *prog, const char *flag, const char *what)
{
    char usage[256];
    snprintf(usage, sizeof usage, "  %s [%s]   (%s)\n", prog, flag, what);
    gpu_args a = gpu_args_start(prog, usage, argc, argv);
    if (argc > 2)
        gpu_args_fail(&a, "one optional argument (%s), got %d", flag, argc - 1);
    if (argc == 2 && strcmp(argv[1], flag))
        gpu_args_fail(&a, "unknown argument '%s'", argv[1]);
    return argc == 2;
}

#endif
