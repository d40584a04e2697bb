/* status.c - error messages. */
#include "util/status.h"

#include <stdio.h>
#include <string.h>

dkv_status dkv_err_setv(dkv_err *err, dkv_status code, const char *fmt, va_list ap)
{
    if (err) {
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    }
    return code;
}

dkv_status dkv_err_set(dkv_err *err, dkv_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dkv_err_setv(err, code, fmt, ap);
    va_end(ap);
    return code;
}

void dkv_err_prefix(dkv_err *err, const char *fmt, ...)
{
    if (!err)
        return;
    char head[DKV_ERR_MSG_MAX], old[DKV_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    snprintf(err->msg, sizeof err->msg, "%.200s: %.300s", head, old);
}

void dkv_err_clear(dkv_err *err)
{
    if (err) {
        err->code = DKV_OK;
        err->msg[0] = '\0';
    }
}

const char *dkv_status_name(dkv_status code)
{
    switch (code) {
    case DKV_OK: return "OK";
    case DKV_EINVAL: return "EINVAL";
    case DKV_ENOMEM: return "ENOMEM";
    case DKV_ENOENT: return "ENOENT";
    case DKV_EIO: return "EIO";
    case DKV_EFORMAT: return "EFORMAT";
    case DKV_ESTATE: return "ESTATE";
    case DKV_ERANGE: return "ERANGE";
    case DKV_EUNSUPPORTED: return "EUNSUPPORTED";
    case DKV_ENODEV: return "ENODEV";
    case DKV_EINTR: return "EINTR";
    }
    return "E?";
}
