/* SPDX-License-Identifier: MIT */
#include "check/world.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/tool.h"
#include "common/clock.h"

#define STOP_SIGNAL SIGURG /* default action: ignore; so a late one does no harm */

static struct gl_world *_Atomic active;
static _Atomic int released; /* futex word */
static _Atomic int inside;   /* threads in the handler */
static struct sigaction old_action;

static inline uint64_t thread_pointer(void)
{
    uint64_t tp = 0;
#if defined(__x86_64__)
    __asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
    __asm__ volatile("mrs %0, tpidr_el0" : "=r"(tp));
#endif
    return tp;
}

static void on_stop(int sig, siginfo_t *si, void *ucv)
{
    (void)sig, (void)si;
    atomic_fetch_add(&inside, 1);
    struct gl_world *w = atomic_load(&active);
    pid_t tid = (pid_t)syscall(SYS_gettid);
    struct gl_stopped_thread *slot = NULL;
    for (size_t i = 0; w && i < w->n; i++)
        if (w->threads[i].tid == tid) {
            slot = &w->threads[i];
            break;
        }
    if (slot && !atomic_load(&released)) {
        const ucontext_t *uc = ucv;
#if defined(__x86_64__)
        static const int regs[GL_WORLD_NREGS] = {
            REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RDI,
            REG_RSI, REG_RBP, REG_RBX, REG_RDX, REG_RAX, REG_RCX, REG_RSP, REG_RIP, REG_EFL};
        for (int i = 0; i < GL_WORLD_NREGS; i++)
            slot->regs[i] = (uint64_t)uc->uc_mcontext.gregs[regs[i]];
        slot->sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
        for (int i = 0; i < GL_WORLD_NREGS; i++)
            slot->regs[i] =
                uc->uc_mcontext.regs[i + 10]; /* x10..x27: the callee-saved among them */
        slot->sp = uc->uc_mcontext.sp;
#else
        slot->sp = (uint64_t)(uintptr_t)&tid;
#endif
        slot->tp = thread_pointer();
        atomic_store(&slot->state, 1);
        while (!atomic_load(&released))
            syscall(SYS_futex, &released, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
        atomic_store(&slot->state, 2);
    }
    atomic_fetch_sub(&inside, 1);
}

/* ---- /proc/self/task, read with system calls only (no malloc) ---- */

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

typedef void (*tid_fn)(pid_t tid, void *arg);

static void each_tid(tid_fn fn, void *arg)
{
    int fd =
        (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[4096];
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
            off += d->d_reclen;
            pid_t tid = 0;
            const char *p = d->d_name;
            if (*p < '0' || *p > '9')
                continue;
            while (*p >= '0' && *p <= '9')
                tid = tid * 10 + (*p++ - '0');
            fn(tid, arg);
        }
    }
    syscall(SYS_close, fd);
}

/* Read a small /proc file into buf (NUL-terminated); its length or -1. */
static long read_small(const char *path, char *buf, size_t len)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    long n = syscall(SYS_read, fd, buf, len - 1);
    syscall(SYS_close, fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

static void task_path(char *out, size_t len, pid_t tid, const char *leaf)
{
    /* "/proc/self/task/<tid>/<leaf>" without snprintf (which may allocate) */
    const char *pre = "/proc/self/task/";
    size_t k = 0;
    for (const char *p = pre; *p && k + 1 < len; p++)
        out[k++] = *p;
    char digits[16];
    int nd = 0;
    do {
        digits[nd++] = (char)('0' + tid % 10);
        tid /= 10;
    } while (tid && nd < 15);
    while (nd && k + 1 < len)
        out[k++] = digits[--nd];
    if (k + 1 < len)
        out[k++] = '/';
    for (const char *p = leaf; *p && k + 1 < len; p++)
        out[k++] = *p;
    out[k] = '\0';
}

/* May this thread be stopped and its stack scanned?  Not if it blocks the
 * signal (it would never answer), nor if it is one of the CUDA driver's own
 * threads (named "cuda..."): its stack holds the driver's copies of device
 * pointers, not the program's. */
static bool stoppable(pid_t tid)
{
    char path[64], buf[2048];
    task_path(path, sizeof path, tid, "comm");
    if (read_small(path, buf, sizeof buf) > 0 && strncmp(buf, "cuda", 4) == 0)
        return false;
    task_path(path, sizeof path, tid, "status");
    if (read_small(path, buf, sizeof buf) <= 0)
        return false; /* gone */
    const char *p = strstr(buf, "SigBlk:");
    if (!p)
        return true;
    p += 7;
    while (*p == ' ' || *p == '\t')
        p++;
    uint64_t mask = 0;
    for (; *p; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (d < 0)
            break;
        mask = mask << 4 | (uint64_t)d;
    }
    return !(mask >> (STOP_SIGNAL - 1) & 1);
}

static void count_tid(pid_t tid, void *arg)
{
    (void)tid;
    (*(size_t *)arg)++;
}

int gl_world_init(struct gl_world *w)
{
    memset(w, 0, sizeof *w);
    size_t n = 0;
    each_tid(count_tid, &n);
    w->cap = n * 2 + 64;
    w->threads = gl_tool_map(w->cap * sizeof *w->threads);
    w->self = (pid_t)syscall(SYS_gettid);
    return w->threads ? 0 : -1;
}

void gl_world_free(struct gl_world *w)
{
    gl_tool_unmap(w->threads, w->cap * sizeof *w->threads);
    memset(w, 0, sizeof *w);
}

static void add_tid(pid_t tid, void *arg)
{
    struct gl_world *w = arg;
    if (tid == w->self)
        return;
    for (size_t i = 0; i < w->n; i++)
        if (w->threads[i].tid == tid)
            return;
    if (!stoppable(tid)) {
        w->skipped++;
        return;
    }
    if (w->n == w->cap) {
        w->skipped++;
        return;
    }
    struct gl_stopped_thread *t = &w->threads[w->n];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    w->n++; /* published before the signal: the handler looks for its slot */
    if (syscall(SYS_tgkill, getpid(), tid, STOP_SIGNAL) != 0)
        t->tid = -1; /* it exited meanwhile */
}

size_t gl_world_stop(struct gl_world *w, unsigned timeout_ms)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_stop;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    atomic_store(&released, 0);
    atomic_store(&active, w);
    sigaction(STOP_SIGNAL, &sa, &old_action);
    uint64_t deadline = gl_clock_ns() + (uint64_t)timeout_ms * 1000000;
    /* Threads may start while others are being stopped: look again until
     * nothing new shows up. */
    for (int round = 0; round < 4; round++) {
        size_t before = w->n;
        each_tid(add_tid, w);
        for (;;) {
            bool all = true;
            for (size_t i = 0; i < w->n; i++)
                if (w->threads[i].tid > 0 && atomic_load(&w->threads[i].state) == 0) {
                    /* gone since? */
                    char path[64], buf[8];
                    task_path(path, sizeof path, w->threads[i].tid, "comm");
                    if (read_small(path, buf, sizeof buf) < 0)
                        w->threads[i].tid = -1;
                    else
                        all = false;
                }
            if (all || gl_clock_ns() > deadline)
                break;
            sched_yield();
        }
        if (w->n == before)
            break;
    }
    size_t stopped = 0;
    for (size_t i = 0; i < w->n; i++) {
        if (w->threads[i].tid > 0 && atomic_load(&w->threads[i].state) == 1)
            stopped++;
        else if (w->threads[i].tid > 0) {
            w->skipped++;
            w->threads[i].tid = -1; /* did not answer in time: its stack is not read */
        }
    }
    return stopped;
}

void gl_world_resume(struct gl_world *w)
{
    atomic_store(&released, 1);
    syscall(SYS_futex, &released, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
    /* Every thread that entered the handler leaves it before the program's own
     * action for the signal comes back. */
    uint64_t deadline = gl_clock_ns() + (uint64_t)5000 * 1000000; /* 5 s */
    while (atomic_load(&inside) > 0 && gl_clock_ns() < deadline)
        sched_yield();
    atomic_store(&active, NULL);
    sigaction(STOP_SIGNAL, &old_action, NULL);
    (void)w;
}
