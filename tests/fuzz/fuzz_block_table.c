/* SPDX-License-Identifier: MIT */
/* Fuzz target: the live-block table (lib/track/block_table.c) against a model.
 *
 * The input is a program of operations on a table of 1, 2 or 4 shards:
 * insert, remove, lookup, detach then reattach or release, update, and a walk
 * that removes some blocks.  Keys come from a small set, 16 to a span of
 * addresses (4 KiB) and 64 to a span of handles, so that bins fill,
 * grow a class, shrink, empty, go to the free lists and come back, and the
 * index grows and shifts slots back.  After every operation the table must
 * answer as the model does; the sanitizers catch what answers cannot show
 * (a bin's header overwritten while still read, an index slot left behind).
 *
 * Input: byte 0 picks the shards; then two bytes an operation: the first's
 * low three bits the operation, bit 3 the key's high bit, bits 4-7 a size;
 * the second the key's low byte. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "event/key.h"
#include "fuzz_check.h"
#include "track/block_table.h"

#define NKEYS 512

static uint64_t key_of(unsigned k)
{
    /* Handles: 256 values from 0x1000, four spans of 64, whose full bins
     * are mapped alone (over 64 blocks: ARENA_CLASSES). */
    if (k & 256)
        return gl_key_make(GL_NS_ARRAY, 0x1000 + (k & 255));
    /* Addresses: span s at 3s + s % 3 spans from the first, 1 to 3 spans
     * apart, so that neighbouring spans share index lines or not; 16 keys a
     * span, 256 bytes apart. */
    unsigned span = (k >> 4) & 15, off = k & 15, at = 3 * span + span % 3;
    return 0x7f0000000000ULL + at * 4096ULL + off * 256;
}

struct model {
    bool live[NKEYS];
    uint64_t size[NKEYS];
    size_t count;
};

static int index_of(uint64_t key)
{
    for (unsigned k = 0; k < NKEYS; k++)
        if (key_of(k) == key)
            return (int)k;
    return -1;
}

static struct gl_block_info block(unsigned k, uint64_t size)
{
    struct gl_block_info b;
    memset(&b, 0, sizeof b);
    b.key = key_of(k);
    b.size = size;
    b.seq = k + 1;
    b.stack = k;
    return b;
}

/* Update: grow the block by 1; remove it when its size becomes a multiple of 4. */
static bool grow(struct gl_block_info *b, void *arg)
{
    (void)arg;
    b->size++;
    return b->size % 4 == 0;
}

/* Walk: remove blocks whose size has bit 1 set; check each against the model. */
static bool visit(const struct gl_block_info *b, void *arg)
{
    struct model *m = arg;
    int k = index_of(b->key);
    CHECK(k >= 0);
    CHECK(m->live[k]);
    CHECK(m->size[k] == b->size);
    CHECK(b->seq == (uint64_t)k + 1);
    return (b->size & 2) != 0;
}

static void check_key(struct gl_table *t, const struct model *m, unsigned k)
{
    struct gl_block_info out;
    bool found = gl_block_table_lookup(t, key_of(k), &out);
    CHECK(found == m->live[k]);
    if (found) {
        CHECK(out.key == key_of(k));
        CHECK(out.size == m->size[k]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct gl_table *t = gl_block_table_create(data[0] % 3);
    CHECK(t);
    static struct model m;
    memset(&m, 0, sizeof m);
    struct gl_table_node *spare = NULL;

    for (size_t i = 1; i + 1 < size; i += 2) {
        unsigned op = data[i] & 7, k = data[i + 1] | (data[i] & 8 ? 256u : 0u);
        uint64_t sz = 1 + (data[i] >> 4);
        struct gl_block_info b = block(k, sz), out;
        switch (op) {
        case 0:
        case 1: { /* insert (twice as likely: the table fills) */
            bool replaced = gl_block_table_insert(t, &b, &out);
            CHECK(replaced == m.live[k]);
            if (replaced)
                CHECK(out.key == b.key && out.size == m.size[k]);
            else
                m.count++;
            m.live[k] = true;
            m.size[k] = sz;
            break;
        }
        case 2: /* remove */
            CHECK(gl_block_table_remove(t, b.key, &out) == m.live[k]);
            if (m.live[k]) {
                CHECK(out.size == m.size[k]);
                m.live[k] = false;
                m.count--;
            }
            break;
        case 3: { /* detach, then put back: a driver free that failed */
            struct gl_table_node *n = gl_block_table_detach(t, b.key, &spare);
            CHECK((n != NULL) == m.live[k]);
            if (n) {
                CHECK(gl_block_table_node_info(n)->size == m.size[k]);
                check_key(t, &(struct model){0}, k); /* gone meanwhile */
                gl_block_table_reattach(t, n);
            }
            break;
        }
        case 4: { /* detach, then release: a driver free that succeeded */
            struct gl_table_node *n = gl_block_table_detach(t, b.key, &spare);
            CHECK((n != NULL) == m.live[k]);
            if (n) {
                gl_block_table_release(t, n);
                m.live[k] = false;
                m.count--;
            }
            break;
        }
        case 5: { /* update under the lock */
            bool removed = false;
            CHECK(gl_block_table_update(t, b.key, grow, NULL, &out, &removed) == m.live[k]);
            if (m.live[k]) {
                m.size[k]++;
                CHECK(removed == (m.size[k] % 4 == 0));
                if (removed) {
                    CHECK(out.size == m.size[k]);
                    m.live[k] = false;
                    m.count--;
                }
            }
            break;
        }
        case 6: { /* a walk that removes some */
            size_t expect = 0;
            for (unsigned j = 0; j < NKEYS; j++)
                expect += m.live[j] && (m.size[j] & 2);
            CHECK(gl_block_table_foreach(t, visit, &m) == expect);
            for (unsigned j = 0; j < NKEYS; j++)
                if (m.live[j] && (m.size[j] & 2)) {
                    m.live[j] = false;
                    m.count--;
                }
            break;
        }
        case 7: /* lookup */
            check_key(t, &m, k);
            break;
        }
        CHECK(gl_block_table_count(t) == m.count);
        check_key(t, &m, k);
    }
    for (unsigned k = 0; k < NKEYS; k++)
        check_key(t, &m, k);
    CHECK(gl_block_table_memory_bytes(t) > 0);
    if (spare)
        gl_block_table_release(t, spare);
    gl_block_table_destroy(t);
    return 0;
}
