/* interrupt.c - the stop-requested flag. */
#include "util/interrupt.h"

#include <signal.h>

static volatile sig_atomic_t g_stop;

void dkv_interrupt_request(void) { g_stop = 1; }
bool dkv_interrupt_requested(void) { return g_stop != 0; }
void dkv_interrupt_clear(void) { g_stop = 0; }
