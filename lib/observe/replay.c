/* SPDX-License-Identifier: MIT */
#include "observe/replay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "event/codec.h"
#include "event/dispatch.h"
#include "stack/stack_depot.h"

#define MAX_FRAMES GL_STACK_MAX_FRAMES
#define MAX_STACK_ID (1u << 24)
/* Room for a line: a stack of MAX_FRAMES frames, each "0x" and 16 digits. */
#define MAX_LINE (32 * 1024)

/* The recording's stack ids to the depot's. */
struct stacks {
    uint32_t *depot_id; /* by recording id; 0: not defined */
    size_t cap;
    uintptr_t *frames; /* MAX_FRAMES: a stack line's */
};

static bool stack_define(struct stacks *s, uint32_t id, uint32_t depot_id)
{
    if (id >= s->cap) {
        size_t cap = s->cap ? s->cap : 64;
        while (cap <= id)
            cap *= 2;
        uint32_t *v = realloc(s->depot_id, cap * sizeof *v);
        if (!v)
            return false;
        memset(v + s->cap, 0, (cap - s->cap) * sizeof *v);
        s->depot_id = v;
        s->cap = cap;
    }
    s->depot_id[id] = depot_id;
    return true;
}

/* "stack ID IP IP ...": 0, or -1 with err. */
static int stack_line(struct stacks *s, const char *p, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    unsigned long id = strtoul(p, &end, 0);
    if (end == p || errno || id == 0 || id >= MAX_STACK_ID) {
        snprintf(err, errlen, "a stack needs an id from 1 to %u", MAX_STACK_ID - 1);
        return -1;
    }
    uintptr_t *frames = s->frames;
    unsigned n = 0;
    for (p = end; *(p += strspn(p, " \t"));) {
        errno = 0;
        unsigned long long ip = strtoull(p, &end, 16);
        if (end == p || errno || (*end && *end != ' ' && *end != '\t')) {
            snprintf(err, errlen, "stack %lu: '%.*s' is not an address", id, (int)strcspn(p, " \t"),
                     p);
            return -1;
        }
        if (n == MAX_FRAMES) {
            snprintf(err, errlen, "stack %lu: more than %d frames", id, MAX_FRAMES);
            return -1;
        }
        frames[n++] = (uintptr_t)ip;
        p = end;
    }
    if (!n) {
        snprintf(err, errlen, "stack %lu has no frames", id);
        return -1;
    }
    if (!stack_define(s, (uint32_t)id, gl_stack_depot_intern(frames, n))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* One line: 1 if an event was dispatched, 0 if none was, -1 with err. */
static int replay_line(struct stacks *s, const char *line, char *err, size_t errlen)
{
    const char *p = line + strspn(line, " \t");
    if (!*p || *p == '#')
        return 0;
    if (strncmp(p, "stack", 5) == 0 && (p[5] == ' ' || p[5] == '\t'))
        return stack_line(s, p + 5, err, errlen);
    struct gl_event ev;
    if (gl_codec_parse(p, &ev, err, errlen) < 0)
        return -1;
    if (ev.stack) {
        if (ev.stack >= s->cap || !s->depot_id[ev.stack]) {
            snprintf(err, errlen, "stack %u is not defined above", ev.stack);
            return -1;
        }
        ev.stack = s->depot_id[ev.stack];
    }
    if (ev.flags & GL_EVF_DERIVED)
        return 0; /* made again by the consumers */
    gl_dispatch(&ev);
    return 1;
}

long gl_replay_text(const char *name, const char *text, size_t len, char *err, size_t errlen)
{
    struct stacks s = {0};
    long events = 0;
    unsigned lineno = 0;
    char *line = malloc(MAX_LINE), why[256];
    s.frames = malloc(MAX_FRAMES * sizeof *s.frames);
    if (!line || !s.frames) {
        snprintf(err, errlen, "%s: out of memory", name);
        free(line);
        free(s.frames);
        return -1;
    }
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        lineno++;
        if (n >= MAX_LINE) {
            snprintf(err, errlen, "%s:%u: line longer than %d bytes", name, lineno, MAX_LINE - 1);
            events = -1;
            break;
        }
        memcpy(line, text + pos, n);
        line[n] = '\0';
        if (n && line[n - 1] == '\r')
            line[n - 1] = '\0';
        pos += n + (nl != NULL);
        int r = replay_line(&s, line, why, sizeof why);
        if (r < 0) {
            snprintf(err, errlen, "%s:%u: %s", name, lineno, why);
            events = -1;
            break;
        }
        events += r;
    }
    free(s.depot_id);
    free(s.frames);
    free(line);
    return events;
}

long gl_replay_file(const char *path, char *err, size_t errlen)
{
    char *text;
    size_t len;
    if (gl_file_read(path, 1u << 30, &text, &len) < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    long n = gl_replay_text(path, text, len, err, errlen);
    free(text);
    return n;
}
