/* interrupt.h - a process-wide "stop requested" flag (set from a SIGINT handler by the CLI).
 * Long-running library loops poll it and return DKV_EINTR, so the caller can close its files
 * cleanly.  Async-signal-safe to set. */
#ifndef DKV_UTIL_INTERRUPT_H
#define DKV_UTIL_INTERRUPT_H

#include <stdbool.h>

void dkv_interrupt_request(void);   /* safe to call from a signal handler */
void dkv_interrupt_request_signal(int sig);   /* the same, remembering which signal (SIGTERM ...) */
/* "SIGINT" or "SIGTERM": the signal that requested the stop (SIGINT when none was named). */
const char *dkv_interrupt_signal_name(void);
bool dkv_interrupt_requested(void);
void dkv_interrupt_clear(void);

#endif
