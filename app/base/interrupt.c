/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/base/interrupt.h"

#include <signal.h>
#include <string.h>

/* Signal state must be a static object: the handler has no other way in. */
static volatile sig_atomic_t g_signal;

static void on_signal(int sig)
{
    g_signal = sig;
    signal(sig, SIG_DFL);
}

void interrupt_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int interrupt_pending(void)
{
    return (int)g_signal;
}
