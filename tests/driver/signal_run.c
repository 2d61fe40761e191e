/* SPDX-License-Identifier: MIT */
/* A program for tests/signal_check.test, run under gpuleak --check-signal
 * against the fake driver (fake_cuda.c): it sends itself the signal as a
 * user would from outside, and waits for each check to reach its log.
 *   signal_run LOG USR1|USR2 plain|own|ignored
 * 1,000 bytes stay pointed to (reachable), 2,000 are lost; a signal, and
 * "Leak check 1" in LOG; 3,000 more lost; a signal, and "Leak check 2".
 * own: the program set a handler of its own for SIGNAL before CUDA started,
 * which must still run, once a signal.  Then a forked child sends the signal
 * to itself: the child does not track, so the program's disposition is back
 * (plain: it dies of the signal; own: its handler runs and it exits 0).
 * ignored: started with SIGNAL ignored, it finds it ignored still. */
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static CUdeviceptr kept;
static atomic_int handled;

static void own_handler(int sig)
{
    (void)sig;
    atomic_fetch_add(&handled, 1);
}

__attribute__((noinline)) static void lose(size_t n)
{
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, n) != CUDA_SUCCESS)
        printf("FAIL: cuMemAlloc %zu\n", n);
    p = 0; /* lost */
}

/* Over the stack lose() used, and deeper: the check's thread stops this
 * one wherever it waits and scans its whole stack, where a stale copy of a
 * lost pointer would keep the block reachable (the client API's check
 * scans the caller's stack from its own frame up, past what it dropped). */
__attribute__((noinline)) static void scrub_stack(void)
{
    volatile uintptr_t zeros[16 * 1024]; /* volatile: every store is made */
    for (size_t i = 0; i < sizeof zeros / sizeof zeros[0]; i++)
        zeros[i] = 0;
}

static int asked_sig;

static void *send_signal(void *arg)
{
    (void)arg;
    raise(asked_sig);
    return NULL;
}

/* The signal, from a thread of its own, as from outside: the handler's frame
 * (with the registers the interrupted code had, vector ones included) is
 * written on that thread's stack, not on main's, which the check scans. */
static void ask_for_check(int sig)
{
    pthread_t t;
    asked_sig = sig;
    if (pthread_create(&t, NULL, send_signal, NULL) != 0 || pthread_join(t, NULL) != 0)
        printf("FAIL: no thread to send the signal from\n");
}

/* Whether LOG holds text, waiting up to 20 s for the check's thread. */
static int wait_for(const char *log, const char *text)
{
    static char buf[1 << 16];
    for (int i = 0; i < 2000; i++) {
        FILE *f = fopen(log, "r");
        if (f) {
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = '\0';
            if (strstr(buf, text))
                return 1;
        }
        struct timespec ten_ms = {0, 10 * 1000 * 1000};
        nanosleep(&ten_ms, NULL);
    }
    printf("FAIL: no \"%s\" in %s\n", text, log);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4 ||
        (strcmp(argv[3], "plain") && strcmp(argv[3], "own") && strcmp(argv[3], "ignored"))) {
        fprintf(stderr, "usage: signal_run LOG USR1|USR2 plain|own|ignored\n");
        return 2;
    }
    const char *log = argv[1];
    int sig = !strcmp(argv[2], "USR1") ? SIGUSR1 : !strcmp(argv[2], "USR2") ? SIGUSR2 : 0;
    if (!sig) {
        fprintf(stderr, "signal_run: %s: not USR1 or USR2\n", argv[2]);
        return 2;
    }
    int own = strcmp(argv[3], "own") == 0;
    if (own)
        signal(sig, own_handler);
    cuInit(0);
    if (cuMemAlloc(&kept, 1000) != CUDA_SUCCESS)
        printf("FAIL: cuMemAlloc 1000\n");
    if (!strcmp(argv[3], "ignored")) {
        /* Started with the signal ignored (nohup): gpuleak leaves it so. */
        struct sigaction now;
        sigaction(sig, NULL, &now);
        if (now.sa_handler != SIG_IGN)
            printf("FAIL: the signal ignored at the start is handled now\n");
        printf("signal_run: done\n");
        return 0;
    }
    lose(2000);
    scrub_stack();
    ask_for_check(sig);
    wait_for(log, "Leak check 1 ");
    lose(3000);
    scrub_stack();
    ask_for_check(sig);
    wait_for(log, "Leak check 2 ");
    if (own && atomic_load(&handled) != 2)
        printf("FAIL: the program's handler ran %d times, expected 2\n", atomic_load(&handled));

    pid_t child = fork();
    if (child == 0) {
        raise(sig);
        _exit(own && atomic_load(&handled) == 3 ? 0 : 3);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (own ? !(WIFEXITED(status) && WEXITSTATUS(status) == 0)
            : !(WIFSIGNALED(status) && WTERMSIG(status) == sig))
        printf("FAIL: the forked child ended with status 0x%x\n", status);
    printf("signal_run: done\n");
    return 0;
}
