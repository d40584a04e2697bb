/* status.h - the one error convention of dkv.
 *
 * Library code (core/, sim/, cuda/) never prints and never exits: a function that can fail
 * returns a dkv_status and, when given a dkv_err, fills it with a message that names what is
 * wrong and where (file:line, field).  Executables (the CLI, tests) decide what to do.
 *
 *     dkv_err err = {0};
 *     if (dkv_thing_do(x, &err) != DKV_OK) fprintf(stderr, "dkv: %s\n", err.msg);
 */
#ifndef DKV_UTIL_STATUS_H
#define DKV_UTIL_STATUS_H

#include <stdarg.h>
#include <stddef.h>

typedef enum dkv_status {
    DKV_OK = 0,
    DKV_EINVAL,      /* bad argument or configuration value */
    DKV_ENOMEM,      /* host allocation failed, or a managed capacity is exhausted */
    DKV_ENOENT,      /* no such file, id, name or key */
    DKV_EIO,         /* read/write failure */
    DKV_EFORMAT,     /* malformed input (a trace line, a preset field, a file) */
    DKV_ESTATE,      /* operation not valid in the current state (double release, ...) */
    DKV_ERANGE,      /* value out of its allowed range */
    DKV_EUNSUPPORTED,/* feature not built or not supported here */
    DKV_ENODEV,      /* no GPU */
    DKV_EINTR        /* interrupted (SIGINT) */
} dkv_status;

#define DKV_ERR_MSG_MAX 512

typedef struct dkv_err {
    dkv_status code;
    char msg[DKV_ERR_MSG_MAX];
} dkv_err;

/* Sets err (when not NULL) to code and a printf-formatted message; returns code. */
dkv_status dkv_err_set(dkv_err *err, dkv_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
dkv_status dkv_err_setv(dkv_err *err, dkv_status code, const char *fmt, va_list ap);

/* Prepends "prefix: " to an existing message (adds context on the way up). */
void dkv_err_prefix(dkv_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Copies src to dst (n bytes, always terminated) with control bytes and bytes that are not valid
 * UTF-8 (and C1 controls) written as \xNN (newlines and tabs kept): input echoed in a message, a binary line of a
 * trace say, cannot reach the terminal raw.  dkv_err_set does this to every message.  Returns
 * the length written. */
size_t dkv_text_escape(char *dst, size_t n, const char *src);

/* Clears err to DKV_OK / "". */
void dkv_err_clear(dkv_err *err);

/* Short name of a status code ("EINVAL", ...). */
const char *dkv_status_name(dkv_status code);

/* Propagating a failed status, the one definition: DKV_TRY(call) returns it; DKV_TRY_OR(st, call,
 * label) stores it in st and jumps to label (functions with a clean-up path). */
#define DKV_TRY(call)                            \
    do {                                         \
        dkv_status dkv_try_st_ = (call);         \
        if (dkv_try_st_ != DKV_OK)               \
            return dkv_try_st_;                  \
    } while (0)
#define DKV_TRY_OR(st, call, label)              \
    do {                                         \
        if (((st) = (call)) != DKV_OK)           \
            goto label;                          \
    } while (0)

#endif
