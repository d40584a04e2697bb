/* interrupt.c - the stop-requested flag. */
#include "util/interrupt.h"

#include <signal.h>

static volatile sig_atomic_t g_stop, g_sig;

void dkv_interrupt_request(void) { g_stop = 1; }
void dkv_interrupt_request_signal(int sig) { g_sig = sig; g_stop = 1; }
const char *dkv_interrupt_signal_name(void) { return g_sig == SIGTERM ? "SIGTERM" : "SIGINT"; }
bool dkv_interrupt_requested(void) { return g_stop != 0; }
void dkv_interrupt_clear(void) { g_stop = 0; }
