/* SPDX-License-Identifier: MIT */
/* lib/report/report_memviz.h and lib/report/pickle.h: the history as a
 * PyTorch memory snapshot, read back by Python's own pickle module. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "common/options.h"
#include "event/key.h"
#include "report/pickle.h"
#include "report/report_memviz.h"
#include "track/stats.h"

#ifndef GL_PYTHON3
#define GL_PYTHON3 "python3"
#endif

static const struct gl_frame alloc_frames[] = {
    {0x401000, "cudaMalloc", NULL, 0, "/usr/lib/libcudart.so.13", NULL, false},
    {0x401100, "make(int)", "/src/app.cu", 12, "/work/app", NULL, false},
    {0x7f00, "step", "/src/train.py", 42, NULL, NULL, true},
};
static const struct gl_frame odd_frames[] = {
    {0x402000, NULL, NULL, 0, "/opt/caf\xe9/libx.so", NULL, false},
};

static unsigned fake_stack_frames(uint32_t stack, struct gl_frame *out, unsigned max, void *arg)
{
    (void)arg;
    const struct gl_frame *f = stack == 1 ? alloc_frames : stack == 2 ? odd_frames : NULL;
    unsigned n = stack == 1 ? 3 : stack == 2 ? 1 : 0;
    if (n > max)
        n = max;
    if (n)
        memcpy(out, f, n * sizeof *f);
    return n;
}

static struct gl_options opt;
static struct gl_usage usage;
static struct gl_report_input in;
static char path[256];

static void setup(void)
{
    gl_options_defaults(&opt);
    memset(&usage, 0, sizeof usage);
    in = (struct gl_report_input){.opt = &opt,
                                  .tool_version = "0.1.0",
                                  .command = "./app",
                                  .pid = 4242,
                                  .stack_frames = fake_stack_frames,
                                  .usage = &usage};
    snprintf(path, sizeof path, "/tmp/gpuleak-memviz-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
}

static void teardown(void) { unlink(path); }

static void write_file(void (*fn)(struct gl_out *, void *), void *arg)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    struct gl_out o;
    gl_out_init(&o, fileno(f), 0);
    fn(&o, arg);
    ck_assert(gl_out_flush(&o));
    fclose(f);
}

/* Each check a Python expression over d, the unpickled file. */
static const char checker[] =
    "import pickle, pickletools, sys\n"
    "def batch_sizes(data):\n"
    "    stack, sizes = [0], []\n"
    "    for op, arg, pos in pickletools.genops(data):\n"
    "        if op.name == 'MARK':\n"
    "            stack.append(0)\n"
    "        elif op.name in ('APPENDS', 'SETITEMS'):\n"
    "            sizes.append(stack.pop())\n"
    "        elif op.name == 'TUPLE':\n"
    "            sizes.append(stack.pop())\n"
    "            stack[-1] += 1\n"
    "        elif op.name in ('BININT', 'BININT1', 'BININT2', 'LONG1', 'BINUNICODE', 'NONE',\n"
    "                         'NEWTRUE', 'NEWFALSE', 'EMPTY_LIST', 'EMPTY_DICT', 'LONG_BINGET'):\n"
    "            stack[-1] += 1\n"
    "    return sizes\n"
    "d = pickle.load(open(sys.argv[1], 'rb'))\n"
    "for line in open(sys.argv[2]):\n"
    "    line = line.rstrip('\\n')\n"
    "    if not eval(line):\n"
    "        print('failed: ' + line)\n"
    "        print(repr(d)[:3000])\n"
    "        sys.exit(1)\n";

#define PY_CHECK(...) py_check_at(__LINE__, (const char *const[]){__VA_ARGS__, NULL})
static void py_check_at(int line, const char *const *checks)
{
    tu_python_checks(line, GL_PYTHON3, checker, path, checks);
}

/* ---- the encoder ---- */

static void values(struct gl_out *o, void *arg)
{
    (void)arg;
    static const int64_t ints[] = {0,          1,           255,       256,       65535,
                                   65536,      -1,          -129,      INT32_MAX, INT32_MIN,
                                   2147483648, -2147483649, 1LL << 47, INT64_MAX, INT64_MIN};
    struct gl_pickle p;
    gl_pickle_begin(&p, o);
    gl_pickle_dict_begin(&p);
    gl_pickle_str(&p, "ints");
    gl_pickle_list_begin(&p);
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        gl_pickle_int(&p, ints[i]);
    gl_pickle_uint(&p, UINT64_MAX);
    gl_pickle_uint(&p, 1ULL << 63);
    gl_pickle_list_end(&p);
    gl_pickle_str(&p, "misc");
    gl_pickle_tuple_begin(&p);
    gl_pickle_bool(&p, true);
    gl_pickle_bool(&p, false);
    gl_pickle_none(&p);
    gl_pickle_str(&p, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    gl_pickle_str(&p, "bad \xe9 \xc0\xaf \xed\xa0\x80 end");
    gl_pickle_str(&p, "");
    gl_pickle_tuple_end(&p);
    gl_pickle_str(&p, "shared");
    gl_pickle_list_begin(&p);
    gl_pickle_list_begin(&p);
    gl_pickle_int(&p, 7);
    gl_pickle_list_end(&p);
    uint32_t id = gl_pickle_put(&p);
    gl_pickle_get(&p, id);
    gl_pickle_list_end(&p);
    gl_pickle_dict_end(&p);
    gl_pickle_end(&p);
}

START_TEST(test_pickle_values)
{
    write_file(values, NULL);
    PY_CHECK("d['ints'] == [0, 1, 255, 256, 65535, 65536, -1, -129, 2**31 - 1, -2**31, 2**31, "
             "-2**31 - 1, 2**47, 2**63 - 1, -2**63, 2**64 - 1, 2**63]",
             "d['misc'] == (True, False, None, 'caf\\u00e9 \\u20ac \\U0001f600', "
             "'bad \\ufffd \\ufffd\\ufffd \\ufffd\\ufffd\\ufffd end', '')",
             "d['shared'] == [[7], [7]] and d['shared'][0] is d['shared'][1]",
             "open(sys.argv[1], 'rb').read()[:2] == b'\\x80\\x02'");
}
END_TEST

/* Long lists and dicts in batches of at most 1,000 items (PyTorch's
 * JavaScript unpickler overflows its stack on one of 100,000), a memo put
 * right after a batch's last item included. */
static void long_containers(struct gl_out *o, void *arg)
{
    (void)arg;
    struct gl_pickle p;
    gl_pickle_begin(&p, o);
    gl_pickle_dict_begin(&p);
    gl_pickle_str(&p, "list");
    gl_pickle_list_begin(&p);
    uint32_t id = 0;
    for (int i = 0; i < 2500; i++) {
        gl_pickle_list_begin(&p);
        gl_pickle_int(&p, i);
        gl_pickle_list_end(&p);
        if (i == 999)
            id = gl_pickle_put(&p);
    }
    gl_pickle_get(&p, id);
    gl_pickle_list_end(&p);
    gl_pickle_str(&p, "dict");
    gl_pickle_dict_begin(&p);
    for (int i = 0; i < 2500; i++) {
        gl_pickle_int(&p, i);
        gl_pickle_uint(&p, (uint64_t)i * 3);
    }
    gl_pickle_dict_end(&p);
    gl_pickle_dict_end(&p);
    gl_pickle_end(&p);
}

START_TEST(test_pickle_batches)
{
    write_file(long_containers, NULL);
    PY_CHECK("d['list'] == [[i] for i in range(2500)] + [[999]]",
             "d['list'][2500] is d['list'][999]", "d['dict'] == {i: 3 * i for i in range(2500)}",
             /* No mark holds more than 2,000 stack items (1,000 pairs). */
             "max(batch_sizes(open(sys.argv[1], 'rb').read())) <= 2000");
}
END_TEST

/* ---- the snapshot ---- */

static struct gl_history_entry events[8];
static struct gl_block_info live[4];
static struct gl_memviz_input v;

static void snapshot(struct gl_out *o, void *arg)
{
    (void)arg;
    gl_report_memviz(o, &in, &v);
}

static void history(void)
{
    /* 1 MiB and 4 KiB on device 0, the first freed; 512 B on device 1;
     * an OOM; a free of a block older than the window. */
    events[0] = (struct gl_history_entry){.time_ns = 1700000000000001000,
                                          .key = 0x7f0000000000,
                                          .size = 1 << 20,
                                          .seq = 5,
                                          .stack = 1,
                                          .action = GL_HIST_ALLOC,
                                          .kind = GL_MEM_DEVICE};
    events[1] = (struct gl_history_entry){.time_ns = 1700000000000002000,
                                          .key = 0x7f0000100000,
                                          .size = 4096,
                                          .seq = 6,
                                          .stack = 2,
                                          .action = GL_HIST_ALLOC,
                                          .kind = GL_MEM_DEVICE};
    events[2] = (struct gl_history_entry){.time_ns = 1700000000000003000,
                                          .key = 0x7f0000000000,
                                          .size = 1 << 20,
                                          .seq = 5,
                                          .stack = 1,
                                          .action = GL_HIST_FREE,
                                          .kind = GL_MEM_DEVICE};
    events[3] = (struct gl_history_entry){.time_ns = 1700000000000004000,
                                          .key = 0x7e0000000000,
                                          .size = 512,
                                          .stream = 0x55aa,
                                          .seq = 7,
                                          .stack = 1,
                                          .device = 1,
                                          .action = GL_HIST_ALLOC,
                                          .kind = GL_MEM_ASYNC};
    events[4] = (struct gl_history_entry){.time_ns = 1700000000000005000,
                                          .size = 1ULL << 40,
                                          .stack = 1,
                                          .dev_free = 123456,
                                          .action = GL_HIST_OOM,
                                          .kind = GL_MEM_DEVICE};
    events[5] = (struct gl_history_entry){.time_ns = 1700000000000006000,
                                          .key = 0x7f0000500000,
                                          .size = 8192,
                                          .seq = 2,
                                          .stack = 2,
                                          .action = GL_HIST_FREE,
                                          .kind = GL_MEM_DEVICE};
    live[0] = (struct gl_block_info){.key = 0x7f0000100000,
                                     .size = 4096,
                                     .seq = 6,
                                     .stack = 2,
                                     .device = 0,
                                     .kind = GL_MEM_DEVICE};
    live[1] = (struct gl_block_info){.key = 0x7e0000000000,
                                     .size = 512,
                                     .seq = 7,
                                     .stack = 1,
                                     .device = 1,
                                     .kind = GL_MEM_ASYNC,
                                     .aux = 0x55aa};
    /* Not drawn: host memory, and a custom pool's sub-allocation. */
    live[2] = (struct gl_block_info){
        .key = 0x10000, .size = 64, .device = -1, .kind = GL_MEM_HOST_PINNED};
    live[3] = (struct gl_block_info){.key = gl_key_make(GL_NS_POOL_SUB, 0x7f0000100000),
                                     .size = 64,
                                     .device = 0,
                                     .kind = GL_MEM_POOL_SUB};
    v = (struct gl_memviz_input){
        .events = events, .nevents = 6, .live = live, .nlive = 4, .dropped = 3, .max_entries = 9};
    usage.used[0] = usage.used[1] = true;
    usage.dev[0].peak_bytes = (1 << 20) + 4096;
    usage.dev[1].peak_bytes = 512;
}

START_TEST(test_snapshot_traces)
{
    history();
    write_file(snapshot, NULL);
    PY_CHECK("len(d['device_traces']) == 2",
             "[e['action'] for e in d['device_traces'][0]] == ['segment_alloc', 'alloc', "
             "'segment_alloc', 'alloc', 'free_requested', 'free_completed', 'segment_free', "
             "'oom', 'free_requested', 'free_completed', 'segment_free']",
             "[e['action'] for e in d['device_traces'][1]] == ['segment_alloc', 'alloc']",
             "d['device_traces'][0][1] == {'action': 'alloc', 'addr': 0x7f0000000000, "
             "'size': 1048576, 'stream': 0, 'time_us': 1700000000000001, 'frames': "
             "[{'filename': '/usr/lib/libcudart.so.13', 'line': 0, 'name': 'cudaMalloc'}, "
             "{'filename': '/src/app.cu', 'line': 12, 'name': 'make(int)'}, "
             "{'filename': '/src/train.py', 'line': 42, 'name': 'step'}]}",
             /* A free carries the stack of what it frees. */
             "d['device_traces'][0][5]['frames'] is d['device_traces'][0][1]['frames']",
             "d['device_traces'][0][7]['size'] == 2**40 and "
             "d['device_traces'][0][7]['device_free'] == 123456",
             "d['device_traces'][1][1]['stream'] == 0x55aa",
             "d['device_traces'][0][3]['frames'] == [{'filename': '/opt/caf\\ufffd/libx.so', "
             "'line': 0, 'name': '0x402000'}]");
}
END_TEST

START_TEST(test_snapshot_segments)
{
    history();
    write_file(snapshot, NULL);
    PY_CHECK("len(d['segments']) == 2",
             "[(s['device'], s['address'], s['total_size']) for s in d['segments']] == "
             "[(0, 0x7f0000100000, 4096), (1, 0x7e0000000000, 512)]",
             "d['segments'][0]['blocks'] == [{'address': 0x7f0000100000, 'size': 4096, "
             "'requested_size': 4096, 'state': 'active_allocated', 'frames': "
             "d['segments'][0]['frames']}]",
             "d['segments'][0]['segment_type'] == 'small' and "
             "d['segments'][0]['is_expandable'] is False",
             "d['segments'][1]['stream'] == 0x55aa",
             "d['gpuleak'] == {'version': 1, 'tool': '0.1.0', 'pid': 4242, 'command': './app', "
             "'max_entries': 9, 'dropped_events': 3, 'peak_bytes': [1052672, 512]}");
}
END_TEST

/* Handles are no addresses: each allocation of one is drawn at a place of
 * its own from 2^52 up, its free at the same, and places never overlap. */
START_TEST(test_handles_placed)
{
    uint64_t h1 = gl_key_make(GL_NS_VMM_HANDLE, 0x55e44f4fa820);
    uint64_t h2 = gl_key_make(GL_NS_ARRAY, 0x55e44f4fa830); /* 16 bytes on: ranges overlap */
    events[0] = (struct gl_history_entry){.key = h1,
                                          .size = 2 << 20,
                                          .seq = 1,
                                          .stack = 1,
                                          .action = GL_HIST_ALLOC,
                                          .kind = GL_MEM_VMM};
    events[1] = (struct gl_history_entry){.key = h2,
                                          .size = 4 << 20,
                                          .seq = 2,
                                          .stack = 1,
                                          .action = GL_HIST_ALLOC,
                                          .kind = GL_MEM_ARRAY};
    events[2] = (struct gl_history_entry){.key = h1,
                                          .size = 2 << 20,
                                          .seq = 1,
                                          .stack = 1,
                                          .action = GL_HIST_FREE,
                                          .kind = GL_MEM_VMM};
    events[3] = (struct gl_history_entry){.key = h1,
                                          .size = 2 << 20,
                                          .seq = 3,
                                          .stack = 1,
                                          .action = GL_HIST_ALLOC,
                                          .kind = GL_MEM_VMM};
    live[0] = (struct gl_block_info){.key = h2, .size = 4 << 20, .seq = 2, .kind = GL_MEM_ARRAY};
    live[1] = (struct gl_block_info){.key = h1, .size = 2 << 20, .seq = 3, .kind = GL_MEM_VMM};
    v = (struct gl_memviz_input){.events = events, .nevents = 4, .live = live, .nlive = 2};
    in.usage = NULL;
    write_file(snapshot, NULL);
    PY_CHECK("[e['addr'] for e in d['device_traces'][0] if e['action'] in ('alloc', "
             "'free_completed')] == [2**52, 2**52 + (4 << 20), 2**52, 2**52 + (10 << 20)]",
             "[s['address'] for s in d['segments']] == [2**52 + (4 << 20), 2**52 + (10 << 20)]");
}
END_TEST

/* An allocation neither freed in the window nor live at the end (its free
 * was in flight when the history was read) is left out: the viewer's
 * replay would take it for a live block with no segment. */
START_TEST(test_unended_allocation_left_out)
{
    history();
    events[6] = (struct gl_history_entry){.time_ns = 1700000000000007000,
                                          .key = 0x7f0000900000,
                                          .size = 8192,
                                          .seq = 8,
                                          .stack = 2,
                                          .action = GL_HIST_ALLOC,
                                          .kind = GL_MEM_DEVICE};
    v.nevents = 7;
    write_file(snapshot, NULL);
    PY_CHECK("all(e['addr'] != 0x7f0000900000 for e in d['device_traces'][0])",
             "len(d['device_traces'][0]) == 11");
}
END_TEST

/* Nothing happened: still a snapshot the viewer opens. */
START_TEST(test_snapshot_empty)
{
    v = (struct gl_memviz_input){0};
    in.usage = NULL;
    write_file(snapshot, NULL);
    PY_CHECK("d['segments'] == [] and d['device_traces'] == []",
             "d['gpuleak']['peak_bytes'] == []");
}
END_TEST

static Suite *memviz_suite(void)
{
    Suite *s = suite_create("report_memviz");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_pickle_values);
    tcase_add_test(tc, test_pickle_batches);
    tcase_add_test(tc, test_snapshot_traces);
    tcase_add_test(tc, test_snapshot_segments);
    tcase_add_test(tc, test_snapshot_empty);
    tcase_add_test(tc, test_handles_placed);
    tcase_add_test(tc, test_unended_allocation_left_out);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(memviz_suite)
