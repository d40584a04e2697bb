/* status.c - error messages. */
#include "util/status.h"

#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (2-4), or 0 (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF). */
static size_t utf8_len(const unsigned char *s)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xbf;
    size_t n;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

size_t dkv_text_escape(char *dst, size_t n, const char *src)
{
    size_t o = 0;
    if (n == 0)
        return 0;
    for (const unsigned char *s = (const unsigned char *)src; *s;) {
        size_t k = *s >= 0x80 ? utf8_len(s) : 0;
        if (k == 2 && s[0] == 0xc2 && s[1] < 0xa0)   /* U+0080..U+009F: C1 controls (CSI ...) */
            k = 0;
        char tmp[8];
        size_t len;
        if (k) {                                       /* valid UTF-8: kept */
            memcpy(tmp, s, k);
            len = k;
        } else if (*s == '\n' || *s == '\t' || (*s >= 0x20 && *s < 0x7f)) {
            tmp[0] = (char)*s;
            len = 1;
            k = 1;
        } else {                                       /* a control or stray byte: \xNN */
            snprintf(tmp, sizeof tmp, "\\x%02x", *s);
            len = 4;
            k = 1;
        }
        if (o + len >= n)
            break;
        memcpy(dst + o, tmp, len);
        o += len;
        s += k;
    }
    dst[o] = '\0';
    return o;
}

dkv_status dkv_err_setv(dkv_err *err, dkv_status code, const char *fmt, va_list ap)
{
    if (err) {
        char raw[DKV_ERR_MSG_MAX];
        err->code = code;
        vsnprintf(raw, sizeof raw, fmt, ap);
        dkv_text_escape(err->msg, sizeof err->msg, raw);   /* input echoed in a message stays text */
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
