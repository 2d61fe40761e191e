/* SPDX-License-Identifier: MIT */
#include "check/growth.h"

#include <stdio.h>
#include <string.h>

#include "track/errors.h"
#include "base/gl_uthash.h"

/* A site's record across checkpoints. */
struct site_state {
    UT_hash_handle hh;
    uint32_t stack;
    uint64_t last_bytes; /* at the previous checkpoint */
    uint64_t last_blocks;
    uint64_t streak_from; /* bytes before the current run of growth */
    uint64_t streak_from_blocks;
    uint32_t streak;  /* checkpoints in a row at which it grew */
    uint64_t seen_at; /* ordinal of the last checkpoint it was seen at */
    bool reported;
};

static unsigned k_checkpoints;
static struct site_state *states;

void gl_growth_configure(unsigned checkpoints) { k_checkpoints = checkpoints; }

unsigned gl_growth_checkpoints(void) { return k_checkpoints; }

static void report(const struct site_state *s, uint64_t bytes, uint64_t blocks, uint64_t ordinal,
                   const char *name, enum gl_framework fw)
{
    struct gl_api_error e = {
        .kind = GL_ERR_GROWTH,
        .stack = s->stack,
        .device = -1,
        .size = bytes,
    };
    e.growth.from_bytes = s->streak_from;
    e.growth.from_blocks = s->streak_from_blocks;
    e.growth.blocks = blocks;
    e.growth.checkpoints = s->streak;
    e.growth.ordinal = (uint32_t)ordinal;
    e.growth.framework = (uint8_t)fw;
    snprintf(e.growth.checkpoint, sizeof e.growth.checkpoint, "%s", name);
    gl_errors_report(&e);
}

/* One site's live bytes at this checkpoint. */
static unsigned observe(uint32_t stack, uint64_t bytes, uint64_t blocks, uint64_t ordinal,
                        const char *name, enum gl_framework fw)
{
    struct site_state *s = NULL;
    HASH_FIND(hh, states, &stack, sizeof stack, s);
    if (!s) {
        if (!bytes)
            return 0;
        s = gl_tool_alloc(sizeof *s);
        if (!s)
            return 0;
        memset(s, 0, sizeof *s);
        s->stack = stack; /* new: it grew from nothing */
        HASH_ADD(hh, states, stack, sizeof s->stack, s);
    }
    if (s->seen_at == ordinal)
        return 0; /* one observation per checkpoint */
    bool missed = s->seen_at + 1 != ordinal && s->seen_at != 0;
    if (missed) { /* absent from a checkpoint: it held nothing then */
        s->last_bytes = 0;
        s->last_blocks = 0;
    }
    s->seen_at = ordinal;
    if (bytes > s->last_bytes) {
        if (s->streak++ == 0) {
            s->streak_from = s->last_bytes;
            s->streak_from_blocks = s->last_blocks;
        }
    } else {
        s->streak = 0;
    }
    s->last_bytes = bytes;
    s->last_blocks = blocks;
    if (s->streak >= k_checkpoints && !s->reported) {
        s->reported = true;
        report(s, bytes, blocks, ordinal, name, fw);
        return 1;
    }
    return 0;
}

unsigned gl_growth_check(uint64_t ordinal, const char *name, const struct gl_site_stats *sites,
                         size_t nsites, const struct gl_framework_site *fw, size_t nfw)
{
    if (!k_checkpoints)
        return 0;
    unsigned found = 0;
    for (size_t i = 0; i < nsites; i++)
        found += observe(sites[i].stack, sites[i].live_bytes, sites[i].live_blocks, ordinal, name,
                         GL_FW_NONE);
    for (size_t i = 0; i < nfw; i++)
        found += observe(fw[i].stack, fw[i].bytes, fw[i].blocks, ordinal, name, fw[i].framework);
    /* Sites not seen now: they fell to nothing (a framework site whose
     * tensors are all gone is simply not handed over). */
    struct site_state *s, *tmp;
    HASH_ITER(hh, states, s, tmp)
    {
        if (s->seen_at != ordinal) {
            s->streak = 0;
            s->last_bytes = 0;
            s->last_blocks = 0;
        }
    }
    return found;
}

void gl_growth_reset(void)
{
    struct site_state *s, *tmp;
    HASH_ITER(hh, states, s, tmp)
    {
        HASH_DEL(states, s);
        gl_tool_free(s, sizeof *s);
    }
}
