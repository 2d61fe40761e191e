/* SPDX-License-Identifier: MIT */
#include "save/log_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "event/dispatch.h"
#include "python/py_code.h"
#include "python/py_frames.h"
#include "save/log_answers.h"
#include "save/log_modules.h"
#include "stack/modules.h"
#include "stack/stack_depot.h"
#include "symbol/symbolize.h"
#include "symbol/unloaded_objects.h"
#include "track/errors.h"
#include "track/tracker.h"

struct verdict {
    uint64_t key, seq;
    uint8_t kind;
};

/* An API error's stack, and the event that made it. */
struct error_stack {
    size_t event;
    uint32_t stack;
};

/* A derived allocation's number (a graph launch's block), as recorded. */
struct derived_seq {
    uint64_t key, seq;
    size_t order;
    bool used;
};

struct clock_pair {
    uint64_t ticks, ns;
};

struct thread_last {
    uint32_t tid;
    size_t event;
};

struct gl_log_file {
    char *path;
    const uint8_t *data;
    size_t size;
    struct gl_log_header header;
    struct gl_log_summary sum;
    char *strings[6]; /* the PROCESS record's, NUL-terminated */
    /* Offsets of records, by kind, in file order. */
    size_t *stacks, nstacks, *codes, ncodes, *modules, nmodules;
    size_t first_event;    /* where replay starts looking for events */
    uint64_t slot_records; /* EVENT_PACKED and ERROR_STACK records read (format 4: one a slot) */
    size_t map_len;        /* the mapping's bytes (the file's, or more: read_staged) */
    bool *cut;             /* set when the file ends inside a record */
    struct verdict *verdicts;
    size_t nverdicts;
    struct gl_log_answers *answers;
    char *why_not;
    char *last_mark;
    struct gl_unloaded_object *unread; /* modules whose files are missing */
    size_t nunread;
    const char *sysroot;         /* where the binaries are looked for; NULL: their paths */
    size_t *failed, nfailed;     /* offsets of releases the driver refused, sorted */
    struct derived_seq *derived; /* sorted by key, then file order */
    size_t nderived;
    struct clock_pair *clocks; /* sorted by ticks */
    size_t nclocks;
    struct error_stack *errors;
    size_t nerrors;
    struct thread_last *threads; /* the last event of each thread, while reading */
    size_t nthreads;
    /* Filled by replay: the modules as the symbolizer takes them. */
    struct gl_unloaded_object *objects;
    uint32_t max_code_id, max_stack_id;
};

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static bool push(size_t **v, size_t *n, size_t off)
{
    if (!gl_util_grow((void **)v, *n, sizeof **v))
        return false;
    (*v)[(*n)++] = off;
    return true;
}

static char *dup_bytes(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

static int cmp_verdict(const void *a, const void *b)
{
    const struct verdict *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

static bool last_event(struct gl_log_file *f, uint32_t tid, size_t off)
{
    for (size_t i = f->nthreads; i-- > 0;)
        if (f->threads[i].tid == tid) {
            f->threads[i].event = off;
            return true;
        }
    if (!gl_util_grow((void **)&f->threads, f->nthreads, sizeof *f->threads))
        return false;
    f->threads[f->nthreads++] = (struct thread_last){tid, off};
    return true;
}

/* An error's stack belongs to the last event its thread wrote before it. */
static bool error_stack(struct gl_log_file *f, uint32_t tid, uint32_t stack)
{
    for (size_t i = 0; i < f->nthreads; i++)
        if (f->threads[i].tid == tid) {
            if (!gl_util_grow((void **)&f->errors, f->nerrors, sizeof *f->errors))
                return false;
            f->errors[f->nerrors++] = (struct error_stack){f->threads[i].event, stack};
            return true;
        }
    return true; /* its event was lost: nothing to attach it to */
}

/* A release is written as it begins; if the driver refused it, the same
 * event again with GL_EVF_FAILED once it ended: the refusal belongs to the
 * thread's last event, which must be that release. */
static bool release_failed(struct gl_log_file *f, const struct gl_event *ev)
{
    for (size_t i = 0; i < f->nthreads; i++)
        if (f->threads[i].tid == ev->tid) {
            struct gl_event begun;
            size_t off = f->threads[i].event;
            gl_log_format_event_decode(le32(f->data + off) & 0xff, f->data + off + 4,
                                       le32(f->data + off) >> 16, &begun);
            if (begun.type != ev->type || begun.key != ev->key)
                return false;
            if (!gl_util_grow((void **)&f->failed, f->nfailed, sizeof *f->failed))
                return false;
            f->failed[f->nfailed++] = off;
            return true;
        }
    return true; /* its beginning was lost */
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_derived(const void *a, const void *b)
{
    const struct derived_seq *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int cmp_clock(const void *a, const void *b)
{
    const struct clock_pair *x = a, *y = b;
    return x->ticks < y->ticks ? -1 : x->ticks > y->ticks;
}

static int cmp_error(const void *a, const void *b)
{
    const struct error_stack *x = a, *y = b;
    return x->event < y->event ? -1 : x->event > y->event;
}

/* A STACK body: its id and frames are well formed (modules checked later). */
static bool check_stack(struct gl_log_cursor *c, struct gl_log_file *f, uint64_t *max_module)
{
    uint64_t id = gl_log_format_get(c), n = gl_log_format_get(c);
    if (c->bad || id == 0 || id > UINT32_MAX || n == 0 || n > GL_STACK_MAX_FRAMES)
        return false;
    if (id > f->max_stack_id)
        f->max_stack_id = (uint32_t)id;
    for (uint64_t i = 0; i < n && !c->bad; i++) {
        uint64_t where = gl_log_format_get(c);
        if (where == 0) {
            uint64_t code = gl_log_format_get(c), off = gl_log_format_get(c);
            if (code == 0 || code > 0x7fffffff || off > UINT32_MAX)
                return false;
        } else {
            gl_log_format_get(c);
            if (where >= 2 && where - 2 + 1 > *max_module)
                *max_module = where - 2 + 1;
        }
    }
    return gl_log_format_done(c);
}

static bool check_record(struct gl_log_file *f, unsigned type, const uint8_t *body, size_t n,
                         size_t off, uint64_t *max_module)
{
    struct gl_log_cursor c = {body, body + n, false};
    switch (type) {
    case GL_LOG_PROCESS: {
        if (f->strings[0])
            return false; /* once */
        gl_log_format_get(&c);
        for (int i = 0; i < 6; i++) {
            size_t len;
            const uint8_t *s = gl_log_format_get_bytes(&c, &len);
            if (c.bad || memchr(s, 0, len) || !(f->strings[i] = dup_bytes(s, len)))
                return false;
        }
        return gl_log_format_done(&c);
    }
    case GL_LOG_EVENT:
    case GL_LOG_EVENT_PACKED: {
        struct gl_event ev;
        if (!gl_log_format_event_decode(type, body, n, &ev))
            return false;
        if (!f->sum.events++)
            f->first_event = off;
        if ((ev.type == GL_EV_FREE || ev.type == GL_EV_VMM_RELEASE) && (ev.flags & GL_EVF_FAILED))
            return release_failed(f, &ev);
        if (ev.flags & GL_EVF_DERIVED) {
            if (!gl_util_grow((void **)&f->derived, f->nderived, sizeof *f->derived))
                return false;
            f->derived[f->nderived++] = (struct derived_seq){ev.key, ev.seq, f->nderived, false};
            return true;
        }
        return last_event(f, ev.tid, off);
    }
    case GL_LOG_STACK:
        return check_stack(&c, f, max_module) && push(&f->stacks, &f->nstacks, off);
    case GL_LOG_MODULE: {
        uint64_t index = gl_log_format_get(&c);
        uint64_t bias = gl_log_format_get(&c), start = gl_log_format_get(&c),
                 end = gl_log_format_get(&c);
        size_t len;
        gl_log_format_get_bytes(&c, &len);
        bool id_ok = len <= GL_LOG_BUILD_ID_MAX;
        const uint8_t *path = gl_log_format_get_bytes(&c, &len);
        (void)bias;
        return gl_log_format_done(&c) && id_ok && index == f->nmodules && start < end && len > 0 &&
               !memchr(path, 0, len) && push(&f->modules, &f->nmodules, off);
    }
    case GL_LOG_PYCODE: {
        uint64_t id = gl_log_format_get(&c);
        gl_log_format_get(&c);
        gl_log_format_get(&c);
        int64_t format = gl_log_format_unzigzag(gl_log_format_get(&c));
        size_t len;
        const uint8_t *file = gl_log_format_get_bytes(&c, &len);
        bool ok = !memchr(file, 0, len);
        const uint8_t *func = gl_log_format_get_bytes(&c, &len);
        ok = ok && !memchr(func, 0, len);
        gl_log_format_get_bytes(&c, &len);
        if (!gl_log_format_done(&c) || !ok || id == 0 || id > 0x7fffffff || format < -1 ||
            format > 16)
            return false;
        if (id > f->max_code_id)
            f->max_code_id = (uint32_t)id;
        return push(&f->codes, &f->ncodes, off);
    }
    case GL_LOG_MARK: {
        size_t len;
        uint64_t number = gl_log_format_get(&c);
        gl_log_format_get(&c);
        const uint8_t *name = gl_log_format_get_bytes(&c, &len);
        if (!gl_log_format_done(&c) || memchr(name, 0, len))
            return false;
        free(f->last_mark);
        if (!(f->last_mark = dup_bytes(name, len)))
            return false;
        f->sum.marks++;
        f->sum.last_mark = f->last_mark;
        f->sum.last_mark_number = number;
        return true;
    }
    case GL_LOG_VERDICT: {
        struct verdict v;
        v.key = gl_log_format_get(&c);
        v.seq = gl_log_format_get(&c);
        v.kind = gl_log_format_get_u8(&c);
        if (!gl_log_format_done(&c) || v.kind >= GL_LEAK_NKINDS)
            return false;
        if (!gl_util_grow((void **)&f->verdicts, f->nverdicts, sizeof *f->verdicts))
            return false;
        f->verdicts[f->nverdicts++] = v;
        return true;
    }
    case GL_LOG_END: {
        uint64_t how = gl_log_format_get(&c);
        int64_t status = gl_log_format_unzigzag(gl_log_format_get(&c));
        gl_log_format_get(&c);
        gl_log_format_get(&c);
        uint64_t reach = gl_log_format_get(&c);
        size_t len = 0;
        const uint8_t *why = reach ? NULL : gl_log_format_get_bytes(&c, &len);
        if (!gl_log_format_done(&c) || how < GL_LOG_END_EXIT || how > GL_LOG_END_OTHER ||
            reach > 1 || f->sum.ended || (why && memchr(why, 0, len)))
            return false;
        f->sum.ended = true;
        f->sum.how = (enum gl_log_end)how;
        f->sum.status = (int)status;
        f->sum.reach_available = reach;
        if (why && !(f->why_not = dup_bytes(why, len)))
            return false;
        f->sum.reach_why_not = f->why_not;
        return true;
    }
    case GL_LOG_ERROR_STACK: {
        uint64_t tid = gl_log_format_get(&c), stack = gl_log_format_get(&c);
        if (!gl_log_format_done(&c) || tid > UINT32_MAX || stack == 0 || stack > UINT32_MAX)
            return false;
        return error_stack(f, (uint32_t)tid, (uint32_t)stack);
    }
    case GL_LOG_CLOCK: {
        uint64_t ticks = gl_log_format_get(&c), ns = gl_log_format_get(&c);
        if (!gl_log_format_done(&c) ||
            !gl_util_grow((void **)&f->clocks, f->nclocks, sizeof *f->clocks))
            return false;
        f->clocks[f->nclocks++] = (struct clock_pair){ticks, ns};
        return true;
    }
    case GL_LOG_LIMIT:
        f->sum.limited = true;
        return n == 0;
    case GL_LOG_ANSWER:
        return gl_log_answers_add(f->answers, body, n);
    default:
        return true; /* a newer writer's: skipped */
    }
}

static struct gl_log_file *fail(struct gl_log_file *f, char *err, size_t errlen, const char *fmt,
                                size_t off, const char *what)
{
    char why[256];
    snprintf(why, sizeof why, fmt, what);
    snprintf(err, errlen, "%s: byte %zu: %s", f->path, off, why);
    gl_log_reader_close(f);
    return NULL;
}

/* Check the records from `from` to the first zero head (or `to`); *end:
 * where reading stopped.  False: f closed, err says why. */
static bool read_records(struct gl_log_file *f, size_t from, size_t to, size_t *end,
                         uint64_t *max_module, char *err, size_t errlen)
{
    size_t off = from;
    while (off + 4 <= to) {
        uint32_t head = le32(f->data + off);
        if (!head)
            break;
        unsigned type = head & 0xff, check = (head >> 8) & 0xff;
        size_t n = head >> 16;
        const char *name = gl_log_format_record_name(type);
        if (!name)
            name = "unknown";
        if (off + gl_log_format_span(n) > to && off + 4 + n > to)
            return *f->cut = true,
                   fail(f, err, errlen, "the file ends inside a record (%s): it was cut short", off,
                        name),
                   false;
        if (gl_log_format_check(f->header.version, f->data + off + 4, n) != check)
            return fail(f, err, errlen,
                        "a record (%s) whose check does not match: the file is damaged", off, name),
                   false;
        bool first = off == gl_log_format_records_at(&f->header);
        if (type == 0 || first != (type == GL_LOG_PROCESS) ||
            !check_record(f, type, f->data + off + 4, n, off, max_module))
            return fail(f, err, errlen, "a record (%s) that does not read: the file is damaged",
                        off, name),
                   false;
        f->slot_records += type == GL_LOG_EVENT_PACKED || type == GL_LOG_ERROR_STACK;
        off += gl_log_format_span(n);
    }
    *end = off;
    return true;
}

/* The events a process staged in its ring and never saw compacted (it died,
 * or is still running): slot c on, c the slot records read, while each is
 * stamped with its number.  They are made into the records they would have
 * become, placed after the last one read (*off moves past them): from there
 * they are read, checked and replayed as any other.  The file's mapping is
 * replaced by a private one with room for them (the file is not touched). */
static bool read_staged(struct gl_log_file *f, size_t *off, uint64_t *max_module, char *err,
                        size_t errlen)
{
    const uint8_t *ring = f->data + f->header.header_size;
    uint64_t mask = f->header.ring_slots - 1, first = f->slot_records, n = 0;
    /* The events copied as they are checked: a process still running may
     * store a slot again before a second look. */
    struct gl_event *evs = NULL;
    for (; n <= mask; n++) {
        struct gl_event ev;
        uint64_t i = first + n;
        int got = gl_log_format_slot_decode(ring + (i & mask) * GL_LOG_SLOT_SIZE, i, &ev);
        if (got < 0) {
            free(evs);
            return fail(f, err, errlen,
                        "a staged %s whose check does not match: the file is damaged",
                        (size_t)(ring - f->data) + (i & mask) * GL_LOG_SLOT_SIZE, "event"),
                   false;
        }
        if (!got)
            break;
        if (!gl_util_grow((void **)&evs, n, sizeof *evs)) {
            free(evs);
            return fail(f, err, errlen, "out of memory reading its %s", *off, "staging ring"),
                   false;
        }
        evs[n] = ev;
    }
    if (!n)
        return true;
    /* The file's pages mapped again, privately and writable, at the start of
     * an area with room for the records after *off. */
    size_t bytes = n * gl_log_format_span(GL_LOG_EVENT_MAX);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = (*off + bytes > f->size ? *off + bytes : f->size) + page;
    len = (len + page - 1) / page * page;
    uint8_t *area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int fd = open(f->path, O_RDONLY | O_CLOEXEC);
    void *p = area == MAP_FAILED || fd < 0
                  ? MAP_FAILED
                  : mmap(area, f->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0);
    if (fd >= 0)
        close(fd);
    if (p == MAP_FAILED) {
        if (area != MAP_FAILED)
            munmap(area, len);
        free(evs);
        return fail(f, err, errlen, "cannot map it to read its %s", *off, "staging ring"), false;
    }
    munmap((void *)f->data, f->size);
    f->data = area;
    f->map_len = len;
    size_t at = *off;
    for (uint64_t k = 0; k < n; k++) {
        const struct gl_event *ev = &evs[k];
        uint64_t words[(GL_LOG_EVENT_MAX + 7) / 8 + 1];
        uint8_t *body = (uint8_t *)words;
        size_t bn;
        unsigned type = GL_LOG_EVENT_PACKED;
        if (ev->type == GL_LOG_SLOT_ERROR_STACK) {
            type = GL_LOG_ERROR_STACK;
            bn = gl_log_format_put(body, ev->tid);
            bn += gl_log_format_put(body + bn, ev->stack);
        } else {
            bn = gl_log_format_event_encode(ev, ev->time_ns, body);
        }
        memset(area + at, 0, gl_log_format_span(bn));
        memcpy(area + at + 4, body, bn);
        uint32_t head = gl_log_format_pack_head(
            type, gl_log_format_check(f->header.version, area + at + 4, bn), bn);
        memcpy(area + at, &head, 4);
        at += gl_log_format_span(bn);
    }
    free(evs);
    memset(area + at, 0, 4);
    uint64_t events = f->sum.events;
    if (!read_records(f, *off, at + 4, off, max_module, err, errlen))
        return false;
    f->sum.staged = f->sum.events - events;
    return true;
}

static struct gl_log_file *open_once(const char *path, char *err, size_t errlen, bool *cut)
{
    struct gl_log_file *f = calloc(1, sizeof *f);
    if (f)
        f->cut = cut;
    if (!f || !(f->path = strdup(path)) || !(f->answers = gl_log_answers_new())) {
        snprintf(err, errlen, "%s: out of memory", path);
        gl_log_reader_close(f);
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: cannot read it: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        gl_log_reader_close(f);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        close(fd);
        gl_log_reader_close(f);
        return NULL;
    }
    f->size = (size_t)st.st_size;
    if (f->size) {
        void *p = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            snprintf(err, errlen, "%s: cannot map it: %s", path, strerror(errno));
            close(fd);
            gl_log_reader_close(f);
            return NULL;
        }
        f->data = p;
    }
    close(fd);
    char why[256];
    if (gl_log_format_header_decode(f->data, f->size, &f->header, why, sizeof why) < 0) {
        snprintf(err, errlen, "%s: %s", path, why);
        gl_log_reader_close(f);
        return NULL;
    }
    uint64_t max_module = 0;
    size_t records = (size_t)gl_log_format_records_at(&f->header);
    if (records > f->size)
        return *f->cut = true, fail(f, err, errlen, "the file ends inside its %s: it was cut short",
                                    f->size, "staging ring");
    size_t off = records;
    if (!read_records(f, records, f->size, &off, &max_module, err, errlen))
        return NULL;
    if (off < f->size && off + 4 > f->size) {
        for (size_t i = off; i < f->size; i++)
            if (f->data[i])
                return *f->cut = true,
                       fail(f, err, errlen, "the file ends inside a record (%s): it was cut short",
                            off, "head");
    }
    f->sum.read_to = off;
    for (size_t i = off; i < f->size; i++)
        f->sum.unread_bytes += f->data[i] != 0;
    if (f->header.ring_slots && !read_staged(f, &off, &max_module, err, errlen))
        return NULL;
    if (max_module > f->nmodules)
        return fail(f, err, errlen, "a stack names module %s, which the file never describes", off,
                    "beyond the last");
    if (!f->strings[0])
        return fail(f, err, errlen, "no process record: %s", off, "the file is damaged");
    f->sum.read_to = off;
    f->sum.size = f->size;
    f->sum.stacks = f->nstacks;
    f->sum.modules = f->nmodules;
    f->sum.verdicts = f->nverdicts;
    if (f->nverdicts)
        qsort(f->verdicts, f->nverdicts, sizeof *f->verdicts, cmp_verdict);
    if (f->nerrors)
        qsort(f->errors, f->nerrors, sizeof *f->errors, cmp_error);
    if (f->nfailed)
        qsort(f->failed, f->nfailed, sizeof *f->failed, cmp_size);
    if (f->nclocks)
        qsort(f->clocks, f->nclocks, sizeof *f->clocks, cmp_clock);
    if (f->nderived)
        qsort(f->derived, f->nderived, sizeof *f->derived, cmp_derived);
    free(f->threads);
    f->threads = NULL;
    f->nthreads = 0;
    return f;
}

/* A file still being written grows in steps: a record can straddle the size
 * its stat gave while the writer extends it.  Cut short, but grown since:
 * read again (a file cut for good stays the size it is). */
struct gl_log_file *gl_log_reader_open(const char *path, char *err, size_t errlen)
{
    for (int tries = 0;; tries++) {
        struct stat before;
        bool cut = false;
        bool known = stat(path, &before) == 0;
        struct gl_log_file *f = open_once(path, err, errlen, &cut);
        struct stat now;
        if (f || !cut || !known || tries == 8 || stat(path, &now) != 0 ||
            now.st_size == before.st_size)
            return f;
    }
}

void gl_log_reader_close(struct gl_log_file *f)
{
    if (!f)
        return;
    if (f->data)
        munmap((void *)f->data, f->map_len ? f->map_len : f->size);
    for (int i = 0; i < 6; i++)
        free(f->strings[i]);
    free(f->stacks);
    free(f->codes);
    free(f->modules);
    free(f->verdicts);
    free(f->why_not);
    free(f->last_mark);
    free(f->errors);
    free(f->failed);
    free(f->clocks);
    free(f->derived);
    free(f->threads);
    for (size_t i = 0; f->unread && i < f->nunread; i++)
        free((char *)f->unread[i].path);
    free(f->unread);
    if (f->objects) {
        for (size_t i = 0; i < f->nmodules; i++)
            free((char *)f->objects[i].path);
        free(f->objects);
    }
    gl_log_answers_free(f->answers);
    free(f->path);
    free(f);
}

void gl_log_reader_summary(const struct gl_log_file *f, struct gl_log_summary *out)
{
    *out = f->sum;
    out->header = &f->header;
    out->version = f->strings[0];
    out->command = f->strings[1];
    out->exe = f->strings[2];
    out->cwd = f->strings[3];
    out->host = f->strings[4];
    out->options = f->strings[5];
}

/* ---- replay ---- */

static struct gl_log_cursor body_at(const struct gl_log_file *f, size_t off)
{
    size_t n = le32(f->data + off) >> 16;
    return (struct gl_log_cursor){f->data + off + 4, f->data + off + 4 + n, false};
}

static void hex(char *out, const uint8_t *id, size_t n)
{
    for (size_t i = 0; i < n && i < GL_LOG_BUILD_ID_MAX; i++)
        sprintf(out + 2 * i, "%02x", id[i]);
    out[2 * (n < GL_LOG_BUILD_ID_MAX ? n : GL_LOG_BUILD_ID_MAX)] = '\0';
}

/* The modules, for the symbolizer and the frame filter; a file missing or not
 * the one that ran is left out, with a note. */
/* Where the file of an object the process loaded is here: under the
 * sysroot (DIR/its/path, then DIR/its-name), or at its path.  NULL: not
 * found. */
static char *find_object(const struct gl_log_file *f, const char *path)
{
    char buf[8192];
    if (f->sysroot) {
        const char *name = strrchr(path, '/');
        snprintf(buf, sizeof buf, "%s%s", f->sysroot, path);
        if (access(buf, R_OK) == 0)
            return strdup(buf);
        snprintf(buf, sizeof buf, "%s/%s", f->sysroot, name ? name + 1 : path);
        return access(buf, R_OK) == 0 ? strdup(buf) : NULL;
    }
    return access(path, R_OK) == 0 ? strdup(path) : NULL;
}

/* The objects missing, in one note: a Python program loads dozens. */
static void note_missing(const struct gl_log_file *f, char **missing, size_t n, size_t of,
                         void (*note)(const char *line))
{
    if (!n)
        return;
    char line[4096];
    int len = snprintf(line, sizeof line,
                       "%s: %zu of the %zu objects the process loaded %s not "
                       "found%s%s (",
                       f->path, n, of, n == 1 ? "is" : "are", f->sysroot ? " under " : " here",
                       f->sysroot ? f->sysroot : "");
    for (size_t i = 0; i < n && i < 3 && len > 0 && (size_t)len < sizeof line; i++)
        len += snprintf(line + len, sizeof line - (size_t)len, "%s%s", i ? ", " : "", missing[i]);
    if (len > 0 && (size_t)len < sizeof line)
        snprintf(line + len, sizeof line - (size_t)len, "%s): their frames show as addresses",
                 n > 3 ? ", ..." : "");
    note(line);
}

static void install_modules(struct gl_log_file *f, void (*note)(const char *line))
{
    f->objects = calloc(f->nmodules ? f->nmodules : 1, sizeof *f->objects);
    f->unread = calloc(f->nmodules ? f->nmodules : 1, sizeof *f->unread);
    char **missing = calloc(f->nmodules ? f->nmodules : 1, sizeof *missing);
    size_t kept = 0, nmissing = 0;
    gl_modules_clear();
    for (size_t i = 0; i < f->nmodules && f->objects && f->unread && missing; i++) {
        struct gl_log_cursor c = body_at(f, f->modules[i]);
        gl_log_format_get(&c);
        uint64_t bias = gl_log_format_get(&c), start = gl_log_format_get(&c),
                 end = gl_log_format_get(&c);
        size_t idlen, plen;
        const uint8_t *id = gl_log_format_get_bytes(&c, &idlen);
        const uint8_t *p = gl_log_format_get_bytes(&c, &plen);
        char *saved = dup_bytes(p, plen);
        if (!saved)
            break;
        gl_modules_add_range(start, end, gl_modules_role_for_path(saved));
        char *path = find_object(f, saved);
        if (!path) {
            f->unread[nmissing] = (struct gl_unloaded_object){
                .bias = bias, .start = start, .end = end, .path = saved};
            missing[nmissing++] = saved;
            continue;
        }
        uint8_t now[GL_LOG_BUILD_ID_MAX];
        char line[8192 + 300], want[2 * GL_LOG_BUILD_ID_MAX + 1], have[2 * GL_LOG_BUILD_ID_MAX + 1];
        unsigned nowlen = idlen ? gl_log_modules_file_build_id(path, now) : 0;
        if (idlen && (nowlen != idlen || memcmp(now, id, idlen) != 0)) {
            hex(want, id, idlen);
            hex(have, now, nowlen);
            snprintf(line, sizeof line,
                     "%s: %s is not the file that ran (build-id %s, the file's %s): its frames "
                     "show as addresses",
                     f->path, path, want, nowlen ? have : "none");
            note(line);
            free(path);
            free(saved);
            continue;
        }
        free(saved);
        f->objects[kept++] =
            (struct gl_unloaded_object){.bias = bias, .start = start, .end = end, .path = path};
    }
    note_missing(f, missing, nmissing, f->nmodules, note);
    free(missing); /* its paths are f->unread's */
    f->nunread = nmissing;
    gl_symbolize_set_objects(f->objects, kept);
    gl_symbolize_set_object_names(f->unread, nmissing);
}

void gl_log_reader_set_sysroot(struct gl_log_file *f, const char *dir) { f->sysroot = dir; }

/* Module index -> bias, for frames (every module, found or not). */
static uint64_t *module_biases(const struct gl_log_file *f)
{
    uint64_t *b = calloc(f->nmodules ? f->nmodules : 1, sizeof *b);
    for (size_t i = 0; b && i < f->nmodules; i++) {
        struct gl_log_cursor c = body_at(f, f->modules[i]);
        gl_log_format_get(&c);
        b[i] = gl_log_format_get(&c);
    }
    return b;
}

static uint32_t *restore_codes(const struct gl_log_file *f)
{
    uint32_t *map = calloc((size_t)f->max_code_id + 1, sizeof *map);
    for (size_t i = 0; map && i < f->ncodes; i++) {
        struct gl_log_cursor c = body_at(f, f->codes[i]);
        uint32_t id = (uint32_t)gl_log_format_get(&c);
        struct gl_py_code code = {0};
        code.address = (uintptr_t)gl_log_format_get(&c);
        code.firstlineno = (int)gl_log_format_unzigzag(gl_log_format_get(&c));
        code.format = (int)gl_log_format_unzigzag(gl_log_format_get(&c));
        size_t flen, nlen, tlen;
        const uint8_t *file = gl_log_format_get_bytes(&c, &flen);
        const uint8_t *func = gl_log_format_get_bytes(&c, &nlen);
        code.table = gl_log_format_get_bytes(&c, &tlen);
        code.table_len = (uint32_t)tlen;
        char *fs = dup_bytes(file, flen), *ns = dup_bytes(func, nlen);
        code.file = fs;
        code.function = ns;
        if (fs && ns && !map[id])
            map[id] = gl_py_code_restore(&code);
        free(fs);
        free(ns);
    }
    return map;
}

static uint32_t *restore_stacks(const struct gl_log_file *f, const uint64_t *bias,
                                const uint32_t *codes)
{
    uint32_t *map = calloc((size_t)f->max_stack_id + 1, sizeof *map);
    uintptr_t *frames = malloc(GL_STACK_MAX_FRAMES * sizeof *frames);
    if (!frames) {
        free(map);
        return NULL;
    }
    for (size_t i = 0; map && i < f->nstacks; i++) {
        struct gl_log_cursor c = body_at(f, f->stacks[i]);
        uint32_t id = (uint32_t)gl_log_format_get(&c);
        unsigned n = (unsigned)gl_log_format_get(&c), k = 0;
        for (unsigned j = 0; j < n; j++) {
            uint64_t where = gl_log_format_get(&c);
            if (where == 0) {
                uint32_t code = (uint32_t)gl_log_format_get(&c);
                uint32_t off = (uint32_t)gl_log_format_get(&c);
                if (codes && code <= f->max_code_id && codes[code])
                    frames[k++] = gl_py_frames_make(codes[code], (int32_t)off);
            } else if (where == 1) {
                frames[k++] = (uintptr_t)gl_log_format_get(&c);
            } else {
                frames[k++] = (uintptr_t)(bias[where - 2] + gl_log_format_get(&c));
            }
        }
        if (!map[id] && k)
            map[id] = gl_stack_depot_intern(frames, k);
    }
    free(frames);
    return map;
}

/* An event's time as ns since the log's start: as written in format 2; in
 * format 1, ticks of the writer's time-stamp counter, interpolated between
 * the clock pairs around them, extrapolated at the ends with the nearest two;
 * one pair or none: as ns (an unknown rate). */
uint64_t gl_log_reader_ns(const struct gl_log_file *f, uint64_t ticks)
{
    if (f->header.version >= 2 || f->nclocks < 2)
        return ticks;
    size_t lo = 0, hi = f->nclocks - 1;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (f->clocks[mid].ticks <= ticks)
            lo = mid;
        else
            hi = mid;
    }
    const struct clock_pair *a = &f->clocks[lo], *b = &f->clocks[hi];
    if (b->ticks == a->ticks)
        return a->ns;
    double rate = (double)(b->ns - a->ns) / (double)(b->ticks - a->ticks);
    double ns = (double)a->ns + ((double)ticks - (double)a->ticks) * rate;
    return ns > 0 ? (uint64_t)ns : 0;
}

/* A derived allocation made again gets the number it had: the first unused
 * one recorded for its key. */
static struct gl_log_file *replaying;

static uint64_t derived_seq_hint(const struct gl_event *ev)
{
    struct gl_log_file *f = replaying;
    size_t lo = 0, hi = f ? f->nderived : 0;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (f->derived[mid].key < ev->key)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; f && lo < f->nderived && f->derived[lo].key == ev->key; lo++)
        if (!f->derived[lo].used) {
            f->derived[lo].used = true;
            return f->derived[lo].seq;
        }
    return 0;
}

/* The stack of the error the event being replayed makes (track/errors.h asks
 * for it while the event is dispatched). */
static uint32_t error_stack_now;
static uint32_t replayed_error_stack(void) { return error_stack_now; }

long gl_log_reader_replay(struct gl_log_file *f, void (*note)(const char *line))
{
    install_modules(f, note);
    uint64_t *bias = module_biases(f);
    uint32_t *codes = restore_codes(f);
    uint32_t *stacks = bias ? restore_stacks(f, bias, codes) : NULL;
    long events = 0;
    size_t next_error = 0;
    uint32_t (*capture)(void) = gl_errors_capture_stack;
    gl_errors_capture_stack = replayed_error_stack;
    replaying = f;
    gl_tracker_seq_hint = derived_seq_hint;
    for (size_t off = f->first_event; f->sum.events && off < f->sum.read_to;) {
        uint32_t head = le32(f->data + off);
        size_t n = head >> 16;
        if (gl_log_format_is_event(head & 0xff)) {
            struct gl_event ev;
            gl_log_format_event_decode(head & 0xff, f->data + off + 4, n, &ev);
            ev.stack = stacks && ev.stack <= f->max_stack_id ? stacks[ev.stack] : 0;
            ev.time_ns = gl_log_reader_ns(f, ev.time_ns);
            error_stack_now = 0;
            while (next_error < f->nerrors && f->errors[next_error].event < off)
                next_error++;
            if (next_error < f->nerrors && f->errors[next_error].event == off) {
                uint32_t s = f->errors[next_error].stack;
                error_stack_now = stacks && s <= f->max_stack_id ? stacks[s] : 0;
            }
            bool release = ev.type == GL_EV_FREE || ev.type == GL_EV_VMM_RELEASE;
            if (release && (ev.flags & GL_EVF_FAILED)) {
                /* the refusal, already applied to its beginning */
            } else if (!(ev.flags & GL_EVF_DERIVED)) {
                if (release && f->nfailed &&
                    bsearch(&off, f->failed, f->nfailed, sizeof *f->failed, cmp_size))
                    ev.flags |= GL_EVF_FAILED;
                gl_dispatch(&ev);
                events++;
            }
        }
        off += gl_log_format_span(n);
    }
    gl_errors_capture_stack = capture;
    gl_tracker_seq_hint = NULL;
    replaying = NULL;
    free(bias);
    free(codes);
    free(stacks);
    return events;
}

enum gl_leak_kind gl_log_reader_classify(const struct gl_block_info *b, void *arg)
{
    const struct gl_log_file *f = arg;
    if (!f->sum.ended)
        return GL_LEAK_DEATH;
    struct verdict key = {.key = b->key};
    const struct verdict *v =
        f->nverdicts ? bsearch(&key, f->verdicts, f->nverdicts, sizeof *f->verdicts, cmp_verdict)
                     : NULL;
    return v ? (enum gl_leak_kind)v->kind : gl_leak_check_classify(b, NULL);
}

const struct gl_driver_query *gl_log_reader_driver(struct gl_log_file *f)
{
    return gl_log_answers_query(f->answers);
}
