/* SPDX-License-Identifier: MIT */
// Programs that end without exit(): each mode leaks one 1 MiB block, then ends
// its own way.  The report must still be written where any code can run, say
// how the program ended, and the exit status must be the program's.
//   abnormal segv|abort|term|throw|quick_exit|kill9
#include <signal.h>
#include <stdexcept>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

NOINLINE static void leak(void)
{
    void *p;
    CHECK(cudaMalloc(&p, 1 << 20)); // SITE:abnormal_leak
    memset(&p, 0, sizeof p);        /* no copy of the pointer left on the stack */
}

NOINLINE static void segv(void)
{
    *(volatile int *)nullptr = 1; // SITE:segv
}

NOINLINE static void do_abort(void)
{
    abort(); // SITE:abort
}

NOINLINE static void term(void)
{
    kill(getpid(), SIGTERM); // SITE:term
    pause();
}

NOINLINE static void do_throw(void)
{
    throw std::runtime_error("nobody catches this"); // SITE:throw
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    leak();
    fflush(stdout);
    if (!strcmp(mode, "segv"))
        segv();
    else if (!strcmp(mode, "abort"))
        do_abort();
    else if (!strcmp(mode, "term"))
        term();
    else if (!strcmp(mode, "throw"))
        do_throw();
    else if (!strcmp(mode, "quick_exit"))
        _exit(3);
    else if (!strcmp(mode, "kill9"))
        raise(SIGKILL);
    fprintf(stderr, "usage: abnormal segv|abort|term|throw|quick_exit|kill9\n");
    return 2;
}
