/* SPDX-License-Identifier: MIT */
/* lib/report/report_json.h: the whole report as one JSON document.
 *
 * Each document is written to a file and read back by Python's json module
 * (strict: UTF-8, no control characters in strings, no duplicate keys); the
 * checks are Python expressions over the parsed document d. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check/leak_check.h"
#include "check/suppress.h"
#include "check/framework.h"
#include "common/suppressions.h"
#include "report/report_json.h"
#include "testutil.h"
#include "usage_input.h"
#include "event/api.h"
#include "track/errors.h"
#include "event/event.h"

#ifndef GL_PYTHON3
#define GL_PYTHON3 "python3"
#endif

#define PID 4242

/* ---- fakes ---- */

static const char *fake_device_name(int device, void *arg)
{
    (void)arg;
    return device == 0 ? "NVIDIA H200" : NULL;
}

enum { STACK_NONE = 0, STACK_MALLOC = 1, STACK_SMALL = 2, STACK_NASTY = 3, STACK_LATIN1 = 4 };

static const struct gl_frame malloc_frames[] = {
    {0x55ed7b831993, "cudaMalloc", NULL, 0, "/work/app", NULL},
    {0x55ed7b7edbe4, "make_buffer(unsigned long)", "/src/app/app.cu", 8, "/work/app",
     "_Z11make_bufferm"},
    {0x7f12aa001000, NULL, NULL, 0, NULL, NULL},
    {0x55ed7b7edd26, "main", "app.cu", 19, "/work/app", NULL},
};
static const struct gl_frame small_frames[] = {
    {0x401500, "cudaMalloc", NULL, 0, "/work/app", NULL},
};
static const struct gl_frame nasty_frames[] = {
    {0x401600, "say \"hi\" \\ \x01\x1f\x7f\t\n\r\b\f end", "C:\\src\\\"x\".cc", 3, "/work/app",
     NULL},
};
static const struct gl_frame latin1_frames[] = {
    {0x401800, "f", NULL, 0, "/opt/caf\xe9/libx.so", NULL},
};

static unsigned fake_stack_frames(uint32_t stack, struct gl_frame *out, unsigned max, void *arg)
{
    (void)arg;
    const struct gl_frame *f;
    unsigned n;
    switch (stack) {
    case STACK_MALLOC:
        f = malloc_frames;
        n = 4;
        break;
    case STACK_SMALL:
        f = small_frames;
        n = 1;
        break;
    case STACK_NASTY:
        f = nasty_frames;
        n = 1;
        break;
    case STACK_LATIN1:
        f = latin1_frames;
        n = 1;
        break;
    default:
        return 0;
    }
    if (n > max)
        n = max;
    memcpy(out, f, n * sizeof *f);
    return n;
}

static size_t fake_vmm_mappings(uint64_t handle_key, uint64_t *addrs, size_t max, void *arg)
{
    (void)handle_key, (void)arg;
    if (max > 0)
        addrs[0] = 0x7f3000000000;
    return 1;
}

/* ---- building the input ---- */

static struct gl_options opt;
static struct gl_leak_result lr;
static struct gl_loss_record recs[16];
static struct gl_block_info blocks[64];
static size_t nblocks;
static struct gl_counters_totals st;
static struct gl_report_input in;
static struct gl_supp_set supps;
static char path[4096];
static const char *const prog_argv[] = {"./app", "--size", "1M"};
static const char *const tool_argv[] = {"--leak-check=full", "--json-file=out.json"};

static void setup(void)
{
    gl_options_defaults(&opt);
    memset(&lr, 0, sizeof lr);
    memset(recs, 0, sizeof recs);
    memset(blocks, 0, sizeof blocks);
    nblocks = 0;
    memset(&st, 0, sizeof st);
    gl_suppressions_set_init(&supps);
    lr.records = recs;
    lr.blocks = blocks;
    path[0] = '\0';
    in = (struct gl_report_input){
        .opt = &opt,
        .tool_version = "0.1.0",
        .command = "./app --size 1M",
        .leaks = &lr,
        .stats = &st,
        .main_tid = PID,
        .pid = PID,
        .ppid = 4000,
        .elapsed_s = 1.5,
        .argc = 3,
        .argv = prog_argv,
        .tool_argc = 2,
        .tool_argv = tool_argv,
        .device_name = fake_device_name,
        .stack_frames = fake_stack_frames,
        .vmm_mappings = fake_vmm_mappings,
        .arg = NULL,
    };
}

static void teardown(void)
{
    gl_suppressions_set_free(&supps);
    if (path[0])
        unlink(path);
}

/* A record of `count` blocks of `size` bytes, numbered from seq, on device. */
static struct gl_loss_record *add_record(enum gl_leak_kind kind, uint32_t stack, uint64_t size,
                                         uint64_t count, uint64_t seq, int device)
{
    struct gl_loss_record *r = &recs[lr.nrecords++];
    r->kind = kind;
    r->stack = stack;
    r->bytes = size * count;
    r->blocks = count;
    r->seq_min = seq;
    r->seq_max = seq + count - 1;
    r->devices = 1ULL << device;
    r->block_begin = nblocks;
    for (uint64_t i = 0; i < count; i++) {
        struct gl_block_info *b = &blocks[nblocks++];
        b->key = 0x7f0000000000 + (seq + i) * 0x100000;
        b->size = size;
        b->seq = seq + i;
        b->ctx = 0xc0ffee;
        b->stack = stack;
        b->tid = PID;
        b->device = (int16_t)device;
        b->kind = GL_MEM_DEVICE;
        b->api = GL_API_cuMemAlloc_v2;
    }
    r->first = blocks[r->block_begin];
    lr.kind[kind].bytes += r->bytes;
    lr.kind[kind].blocks += count;
    lr.in_use.bytes += r->bytes;
    lr.in_use.blocks += count;
    return r;
}

static void suppress(const char *text)
{
    char err[512];
    int rc = gl_suppressions_load_text(&supps, text, strlen(text), "s.supp", err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    in.supps = &supps;
    gl_suppress_records(&lr, &supps, fake_stack_frames, NULL);
}

static char *render(void)
{
    if (path[0])
        unlink(path);
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/gpuleak-json-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    struct gl_out o;
    gl_out_init(&o, fd, PID);
    gl_report_json(&o, &in);
    ck_assert(gl_out_flush(&o));
    char *text = tu_slurp(fd, NULL);
    close(fd);
    return text;
}

/* Parse the document strictly and evaluate each line of checks (Python
 * expressions over d, the document, and raw, its bytes): fail naming those that
 * do not hold. */
static const char checker[] =
    "import json, sys\n"
    "def no_dups(pairs):\n"
    "    keys = [k for k, _ in pairs]\n"
    "    assert len(keys) == len(set(keys)), 'duplicate keys %r' % keys\n"
    "    return dict(pairs)\n"
    "raw = open(sys.argv[1], 'rb').read()\n"
    "d = json.loads(raw.decode('utf-8'), object_pairs_hook=no_dups)\n"
    "bad = []\n"
    "for line in open(sys.argv[2], encoding='utf-8').read().split('\\n'):\n"
    "    if not line.strip():\n"
    "        continue\n"
    "    try:\n"
    "        ok = eval(line, {'d': d, 'raw': raw})\n"
    "    except Exception as e:\n"
    "        ok, line = False, line + '  -> ' + repr(e)\n"
    "    if not ok:\n"
    "        bad.append(line)\n"
    "for b in bad:\n"
    "    print('does not hold: ' + b)\n"
    "sys.exit(1 if bad else 0)\n";

#define JSON_CHECK(...) json_check_at(__LINE__, (const char *const[]){__VA_ARGS__, NULL})
static void json_check_at(int line, const char *const *checks)
{
    tu_python_checks(line, GL_PYTHON3, checker, path, checks);
}

/* ---- the document ---- */

static void standard_records(void)
{
    add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 1048576, 1, 11, 0);
    add_record(GL_LEAK_REACHABLE, STACK_SMALL, 32, 2, 12, 0); /* not shown by default */
    add_record(GL_LEAK_POSSIBLE, STACK_SMALL, 4096, 3, 20, 2);
    st.allocs = 30;
    st.frees = 5;
    st.bytes_allocated = 2000000;
    st.peak_bytes = 1500000;
}

START_TEST(test_document)
{
    standard_records();
    char *text = render();
    JSON_CHECK(
        "d['format'] == 'gpuleak-report'", "d['format_version'] == 1",
        "d['tool'] == 'gpuleak' and d['version'] == '0.1.0'",
        "d['pid'] == 4242 and d['ppid'] == 4000", "abs(d['elapsed_s'] - 1.5) < 1e-9",
        "d['command'] == './app --size 1M'", "d['argv'] == ['./app', '--size', '1M']",
        "d['options'] == ['--leak-check=full', '--json-file=out.json']",
        "d['devices'] == [{'ordinal': 0, 'name': 'NVIDIA H200'}, {'ordinal': 2, 'name': None}]",
        /* Every record, shown or not, in order. */
        "[r['index'] for r in d['records']] == [1, 2, 3]",
        "[r['kind'] for r in d['records']] == ['definite', 'reachable', 'possible']",
        "[r['error'] for r in d['records']] == [True, False, True]",
        "[r['shown'] for r in d['records']] == [True, False, True]",
        "all(r['suppressed_by'] is None and r['cached_by'] is None for r in d['records'])",
        "d['records'][0]['bytes'] == 1048576 and d['records'][0]['blocks'] == 1",
        "d['records'][2]['bytes'] == 12288 and d['records'][2]['blocks'] == 3",
        "d['records'][0]['api'] == 'cudaMalloc'",
        "d['records'][0]['memory_kind'] == 'device memory'",
        "d['records'][2]['allocations'] == {'first': 20, 'last': 22}",
        "d['records'][0]['text'] == 'Block 0x7f0000b00000 on device 0 (NVIDIA H200): device "
        "memory from cudaMalloc, allocation #11'",
        /* Frames as symbolized, unknowns null. */
        "len(d['records'][0]['frames']) == 4",
        "d['records'][0]['frames'][1] == {'ip': '0x55ed7b7edbe4', 'function': 'make_buffer"
        "(unsigned long)', 'mangled': '_Z11make_bufferm', 'file': '/src/app/app.cu', 'line': 8, "
        "'object': '/work/app'}",
        "d['records'][0]['frames'][2] == {'ip': '0x7f12aa001000', 'function': None, 'mangled': "
        "None, 'file': None, 'line': 0, 'object': None}",
        "[f['function'] for f in d['records'][0]['frames']] == ['cudaMalloc', 'make_buffer"
        "(unsigned long)', None, 'main']",
        /* All the blocks of a record. */
        "[len(r['block_list']) for r in d['records']] == [1, 2, 3]",
        "[b['address'] for b in d['records'][2]['block_list']] == ['0x7f0001400000', "
        "'0x7f0001500000', '0x7f0001600000']",
        "[b['allocation'] for b in d['records'][2]['block_list']] == [20, 21, 22]",
        "all(b['size'] == 4096 and b['device'] == 2 for b in d['records'][2]['block_list'])",
        "d['records'][2]['block_list'][1]['memory_kind'] == 'device memory'",
        "d['records'][2]['block_list'][1]['driver_api'] == 'cuMemAlloc_v2'",
        "d['records'][2]['block_list'][1]['thread'] == 4242",
        "d['records'][2]['block_list'][1]['context'] == '0xc0ffee'",
        "d['records'][2]['block_list'][1]['stream'] is None",
        "d['records'][2]['block_list'][1]['size_unknown'] is False",
        "d['records'][2]['block_list'][1]['imported'] is False",
        /* Summary and errors. */
        "d['summary']['in_use'] == {'bytes': 1060928, 'blocks': 6}",
        "d['summary']['imported'] == {'bytes': 0, 'blocks': 0}",
        "d['summary']['allocs'] == 30 and d['summary']['frees'] == 5",
        "d['summary']['bytes_allocated'] == 2000000 and d['summary']['peak_bytes'] == 1500000",
        "sorted(d['summary']['leaks']) == sorted(['definite', 'indirect', 'possible', "
        "'reachable', 'cached', 'suppressed'])",
        "d['summary']['leaks']['definite'] == {'bytes': 1048576, 'blocks': 1}",
        "d['summary']['leaks']['reachable'] == {'bytes': 64, 'blocks': 2}",
        "d['summary']['leaks']['possible'] == {'bytes': 12288, 'blocks': 3}",
        "d['summary']['leaks']['suppressed'] == {'bytes': 0, 'blocks': 0}",
        "d['errors'] == {'errors': 2, 'contexts': 2, 'suppressed': 0, 'suppressed_contexts': 0}",
        "d['suppressions_used'] == []");
    free(text);
}
END_TEST

/* An indirectly lost record held only through lost host memory names that
 * block and the code that allocated it, as a frame; the others say null. */
static bool holder_site(uint64_t ip, struct gl_frame *out, void *arg)
{
    (void)arg;
    *out = (struct gl_frame){.ip = ip, .object = "/usr/lib/libcufft.so.12"};
    return true;
}

START_TEST(test_held_through)
{
    opt.show_leak_kinds = GL_LEAK_KINDS_ALL;
    add_record(GL_LEAK_INDIRECT, STACK_SMALL, 6967984, 1, 11, 0);
    add_record(GL_LEAK_INDIRECT, STACK_SMALL, 4096, 1, 12, 0);
    add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 1048576, 1, 13, 0);
    /* The first two records' blocks are held; the second's by code unknown. */
    static struct gl_reach_holder held[] = {
        {.key = 0x7f0000b00000, .bytes = 56, .caller = 0x7f52ce2b6ac},
        {.key = 0x7f0000c00000, .bytes = 8, .caller = 0}};
    static struct gl_reachability reach = {.available = true};
    reach.held = held;
    reach.nheld = 2;
    in.reach = &reach;
    in.code_frame = holder_site;
    char *text = render();
    JSON_CHECK("d['records'][0]['held_through'] == {'bytes': 56, 'allocated_by': {'ip': "
               "'0x7f52ce2b6ac', 'function': None, 'mangled': None, 'file': None, 'line': 0, "
               "'object': '/usr/lib/libcufft.so.12'}}",
               "d['records'][1]['held_through'] == {'bytes': 8, 'allocated_by': None}",
               "d['records'][2]['held_through'] is None");
    free(text);
    in.reach = NULL;
    in.code_frame = NULL;
}
END_TEST

/* Live at death (a saved log of a process that died): the records' kind is
 * "death", and summary.leaks has a "death" member only when there are such
 * blocks, after "cached", so that every other document stays as it was. */
START_TEST(test_live_at_death)
{
    opt.show_leak_kinds = GL_LEAK_KINDS_ALL;
    add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 1048576, 1, 11, 0);
    char *text = render();
    JSON_CHECK("'death' not in d['summary']['leaks']",
               "list(d['summary']['leaks']) == ['definite', 'indirect', 'possible', 'reachable', "
               "'cached', 'suppressed']");
    free(text);
    add_record(GL_LEAK_DEATH, STACK_SMALL, 4096, 3, 20, 0);
    text = render();
    JSON_CHECK("[r['kind'] for r in d['records']] == ['definite', 'death']",
               "d['records'][1]['shown'] is True",
               "d['summary']['leaks']['death'] == {'bytes': 12288, 'blocks': 3}",
               "list(d['summary']['leaks']) == ['definite', 'indirect', 'possible', 'reachable', "
               "'cached', 'death', 'suppressed']");
    free(text);
}
END_TEST

START_TEST(test_suppressions_used)
{
    standard_records();
    add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 10, 1, 40, 0);
    suppress("{\n   hide \"make_buffer\" \\ co\n   gpuleak:Leak\n   fun:cudaMalloc\n"
             "   fun:make_buffer*\n}\n"
             "{\n   unused\n   gpuleak:Leak\n   fun:nothing\n}\n"
             "{\n   small-is-cached\n   gpuleak:Cached\n   match-leak-kinds: possible\n"
             "   fun:cudaMalloc\n}\n");
    char *text = render();
    JSON_CHECK(
        "[r['kind'] for r in d['records']] == ['definite', 'reachable', 'cached', 'definite']",
        "[r['suppressed_by'] for r in d['records']] == ['hide \"make_buffer\" \\\\ co', None, "
        "None, 'hide \"make_buffer\" \\\\ co']",
        "[r['cached_by'] for r in d['records']] == [None, None, 'small-is-cached', None]",
        "[r['shown'] for r in d['records']] == [False, False, False, False]",
        "[r['error'] for r in d['records']] == [False, False, False, False]",
        "d['summary']['leaks']['suppressed'] == {'bytes': 1048586, 'blocks': 2}",
        "d['summary']['leaks']['definite'] == {'bytes': 0, 'blocks': 0}",
        "d['summary']['leaks']['cached'] == {'bytes': 12288, 'blocks': 3}",
        "d['errors'] == {'errors': 0, 'contexts': 0, 'suppressed': 2, 'suppressed_contexts': 2}",
        "d['suppressions_used'] == ["
        "{'name': 'hide \"make_buffer\" \\\\ co', 'file': 's.supp', 'line': 1, 'kind': 'Leak', "
        "'count': 2, 'bytes': 1048586, 'blocks': 2}, "
        "{'name': 'small-is-cached', 'file': 's.supp', 'line': 12, 'kind': 'Cached', "
        "'count': 1, 'bytes': 12288, 'blocks': 3}]");
    /* In the text: quotes and backslashes escaped. */
    ck_assert_ptr_nonnull(strstr(text, "\"hide \\\"make_buffer\\\" \\\\ co\""));
    free(text);
}
END_TEST

START_TEST(test_escaping)
{
    in.command = "./app \"quoted\" back\\slash \x01\x02\x1f\x7f\t\n\r\b\f end";
    static const char *const nasty_argv[] = {"./app", "\"", "\\", "\n", "caf\xc3\xa9"};
    in.argv = nasty_argv;
    in.argc = 5;
    add_record(GL_LEAK_DEFINITE, STACK_NASTY, 8, 1, 1, 0);
    char *text = render();
    JSON_CHECK(
        "d['command'] == './app \"quoted\" back\\\\slash \\x01\\x02\\x1f\\x7f\\t\\n\\r\\b\\f end'",
        "d['argv'] == ['./app', '\"', '\\\\', '\\n', 'caf\\u00e9']",
        "d['records'][0]['frames'][0]['function'] == 'say \"hi\" \\\\ "
        "\\x01\\x1f\\x7f\\t\\n\\r\\b\\f end'",
        "d['records'][0]['frames'][0]['file'] == 'C:\\\\src\\\\\"x\".cc'",
        /* No raw control character anywhere but the layout's newlines. */
        "all(b >= 0x20 or b == 0x0a for b in raw)");
    ck_assert_ptr_null(strchr(text, '\x01'));
    ck_assert_ptr_null(strchr(text, '\r'));
    free(text);
}
END_TEST

START_TEST(test_block_kinds)
{
    struct gl_loss_record *a = add_record(GL_LEAK_DEFINITE, STACK_SMALL, 100, 1, 1, 0);
    blocks[a->block_begin].kind = GL_MEM_ASYNC;
    blocks[a->block_begin].aux = 0x5eed000;
    blocks[a->block_begin].api = GL_API_cuMemAllocAsync;
    a->first = blocks[a->block_begin];
    struct gl_loss_record *v = add_record(GL_LEAK_DEFINITE, STACK_SMALL, 2097152, 1, 2, 0);
    struct gl_block_info *vb = &blocks[v->block_begin];
    vb->kind = GL_MEM_VMM;
    vb->key = gl_key_make(GL_NS_VMM_HANDLE, 0x1234);
    vb->flags = GL_BLK_RELEASED | GL_BLK_SIZE_UNKNOWN;
    vb->aux = 1;
    vb->api = GL_API_cuMemCreate;
    v->first = *vb;
    struct gl_loss_record *i = add_record(GL_LEAK_DEFINITE, STACK_SMALL, 8192, 1, 3, 0);
    blocks[i->block_begin].flags = GL_BLK_IMPORTED;
    blocks[i->block_begin].kind = GL_MEM_IPC;
    i->first = blocks[i->block_begin];
    char *text = render();
    JSON_CHECK("d['records'][0]['block_list'][0]['stream'] == '0x5eed000'",
               "d['records'][0]['block_list'][0]['memory_kind'] == 'stream-ordered memory'",
               "d['records'][0]['block_list'][0]['driver_api'] == 'cuMemAllocAsync'",
               "d['records'][1]['block_list'][0]['handle'] == '0x1234'",
               "'address' not in d['records'][1]['block_list'][0]",
               "d['records'][1]['block_list'][0]['released'] is True",
               "d['records'][1]['block_list'][0]['mappings'] == 1",
               "d['records'][1]['block_list'][0]['size_unknown'] is True",
               "d['records'][2]['block_list'][0]['imported'] is True",
               "'released' not in d['records'][2]['block_list'][0]");
    free(text);
}
END_TEST

START_TEST(test_api_errors)
{
    /* A double free with its block's stacks (the free's not kept), and a
     * suppressed context: both listed, the second marked. */
    struct gl_error_context ctx[2];
    memset(ctx, 0, sizeof ctx);
    struct gl_api_error *e = &ctx[0].first;
    e->kind = GL_ERR_DOUBLE_FREE;
    e->api = GL_API_cuMemFree_v2;
    e->flags = GL_ERRF_BLOCK | GL_ERRF_FREED;
    e->stack = STACK_MALLOC; /* its first frame names the call the program made */
    e->tid = 4243;
    e->addr = 0x7f0000100000ULL;
    e->block.block.key = 0x7f0000100000ULL;
    e->block.block.size = 4096;
    e->block.block.stack = STACK_SMALL;
    e->block.block.kind = GL_MEM_DEVICE;
    ctx[0].count = 3;
    ctx[1].first = *e;
    ctx[1].first.kind = GL_ERR_INVALID_FREE;
    ctx[1].count = 5;
    ctx[1].suppressed_by = &ctx[1]; /* any token */
    in.api_contexts = ctx;
    in.napi_contexts = 2;
    char *text = render();
    JSON_CHECK("len(d['api_errors']) == 2",
               "d['api_errors'][0]['kind'] == 'DoubleFree' and d['api_errors'][0]['count'] == 3",
               "d['api_errors'][0]['suppressed'] is False and d['api_errors'][1]['suppressed'] "
               "is True",
               "d['api_errors'][0]['what'] == 'Double free: cudaMalloc(0x7F0000100000): the "
               "block was already freed'",
               "d['api_errors'][0]['tid'] == 4243 and d['api_errors'][0]['size'] == 0",
               "d['api_errors'][0]['address'] == '0x7f0000100000'",
               "[f['function'] for f in d['api_errors'][0]['frames']][0] == 'cudaMalloc'",
               "len(d['api_errors'][0]['frames']) == 4",
               "[a['what'] for a in d['api_errors'][0]['aux']] == ['Address 0x7F0000100000 is 0 "
               "bytes inside a block of 4,096 bytes free\\'d', 'Block was alloc\\'d at']",
               "d['api_errors'][0]['aux'][0]['stack_kept'] is False",
               "d['api_errors'][0]['aux'][0]['frames'] == []",
               "d['api_errors'][0]['aux'][1]['stack_kept'] is True",
               "[f['function'] for f in d['api_errors'][0]['aux'][1]['frames']] == ['cudaMalloc']",
               "d['api_errors'][1]['kind'] == 'InvalidFree'");
    free(text);
}
END_TEST

/* ---- usage, statistics, the program's checks, growth (issue 24) ---- */

static struct gl_usage usage_in;
static struct gl_site_stats sites_in[2];

/* Device 0: device memory, 3 blocks allocated (2 small, one of them freed, and
 * 1 large), and a stream-ordered allocation that failed; pinned host memory,
 * allocated and freed; a device beyond 31.  Two top sites. */
static void usage_input(void)
{
    tu_usage_input(&usage_in, sites_in, STACK_MALLOC, STACK_SMALL);
    usage_in.used[GL_STATS_SLOT_OTHER] = true; /* used, but nothing allocated there */
    in.usage = &usage_in;
    in.top_sites = sites_in;
    in.ntop_sites = 2;
}

/* GPU MEMORY SUMMARY's groups always; the splits and the sites with --stats. */
START_TEST(test_usage)
{
    char *text = render();
    JSON_CHECK("d['usage'] == [] and d['stats'] is None", "d['leak_checks'] == []",
               "d['leak_checks_dropped'] == 0 and d['growth'] == []");
    free(text);
    usage_input();
    text = render();
    JSON_CHECK(
        "[u['slot'] for u in d['usage']] == ['device', 'host', 'other']",
        "[u['device'] for u in d['usage']] == [0, None, None]",
        "[u['name'] for u in d['usage']] == ['NVIDIA H200', None, None]",
        "d['usage'][0]['in_use_bytes'] == 1052672 and d['usage'][0]['peak_bytes'] == 1056768",
        "d['usage'][0]['peak_allocation'] == 7",
        "[f['function'] for f in d['usage'][0]['peak_frames']][1] == 'make_buffer(unsigned long)'",
        "[k['memory_kind'] for k in d['usage'][0]['kinds']] == ['device memory', "
        "'stream-ordered memory']",
        "d['usage'][0]['kinds'][0] == {'memory_kind': 'device memory', "
        "'current': {'bytes': 1052672, 'blocks': 2}, 'peak': {'bytes': 1056768, 'blocks': 3}, "
        "'allocated': {'bytes': 1056768, 'blocks': 3}, 'freed': {'bytes': 4096, 'blocks': 1}, "
        "'failed': {'allocations': 0, 'bytes': 0}}",
        "d['usage'][0]['kinds'][1]['failed'] == {'allocations': 1, 'bytes': 1099511627776}",
        "d['usage'][0]['kinds'][1]['allocated'] == {'bytes': 0, 'blocks': 0}",
        "d['usage'][1]['kinds'][0]['memory_kind'] == 'pinned host memory'",
        "d['usage'][1]['peak_allocation'] == 2 and len(d['usage'][1]['peak_frames']) == 1",
        "d['usage'][2]['peak_allocation'] is None and d['usage'][2]['peak_frames'] == []",
        "d['usage'][2]['kinds'] == []", "d['stats'] is None");
    free(text);
    opt.stats = true;
    text = render();
    JSON_CHECK("d['usage'][0]['kinds'][0]['small'] == {'current': {'bytes': 4096, 'blocks': 1}, "
               "'peak': {'bytes': 8192, 'blocks': 2}, 'allocated': {'bytes': 8192, 'blocks': 2}, "
               "'freed': {'bytes': 4096, 'blocks': 1}}",
               "d['usage'][0]['kinds'][0]['large']['current'] == {'bytes': 1048576, 'blocks': 1}",
               "d['usage'][0]['kinds'][0]['large']['freed'] == {'bytes': 0, 'blocks': 0}",
               "'small' in d['usage'][1]['kinds'][0]", "d['stats']['small_limit'] == 1048576",
               "[(s['peak_bytes'], s['live_bytes'], s['live_blocks']) for s in "
               "d['stats']['top_sites']] == [(1048576, 1048576, 1), (8192, 4096, 1)]",
               "len(d['stats']['top_sites'][0]['frames']) == 4",
               "d['stats']['top_sites'][1]['frames'][0]['function'] == 'cudaMalloc'");
    free(text);
    in.ntop_sites = 0;
    text = render();
    JSON_CHECK("d['stats'] == {'small_limit': 1048576, 'top_sites': []}");
    free(text);
}
END_TEST

/* Two checks the program asked for: a full one into the log, and a delta
 * since a checkpoint into its buffer; five earlier ones not kept. */
static struct gl_report_check_record check_recs[2];
static struct gl_report_check checks_in[3];

static void checks_input(void)
{
    memset(check_recs, 0, sizeof check_recs);
    memset(checks_in, 0, sizeof checks_in);
    check_recs[0] = (struct gl_report_check_record){
        .index = 1,
        .bytes = 1048576,
        .indirect_bytes = 64,
        .blocks = 1,
        .seq_min = 11,
        .seq_max = 11,
        .stack = STACK_MALLOC,
        .api = GL_API_cuMemAlloc_v2,
        .kind = GL_LEAK_DEFINITE,
        .mem_kind = GL_MEM_DEVICE,
        .error = true,
        .title = "1,048,640 (1,048,576 direct, 64 indirect) bytes in 1 blocks are definitely "
                 "lost in loss record 1 of 2",
        .text = "Block 0x7f0000b00000 on device 0 (NVIDIA H200): \"quoted\" \\",
    };
    struct gl_report_check *c = &checks_in[0];
    c->number = 6;
    c->select = GL_SELECT_ALL;
    c->elapsed_s = 1.5;
    c->allocs = 10;
    c->errors = 1;
    c->in_use = (struct gl_leak_totals){1048640, 3};
    c->kind[GL_LEAK_DEFINITE] = (struct gl_leak_totals){1048576, 1};
    c->kind[GL_LEAK_REACHABLE] = (struct gl_leak_totals){64, 2};
    c->nrecords = 2;
    c->printed = 1;
    c->records = &check_recs[0];
    c->nkept = 1;
    check_recs[1] = (struct gl_report_check_record){
        .index = 1,
        .bytes = 2097152,
        .blocks = 2,
        .before_bytes = 1048576,
        .before_blocks = 1,
        .seq_min = 11,
        .seq_max = 12,
        .stack = STACK_SMALL,
        .api = GL_API_cuMemAllocAsync,
        .kind = GL_LEAK_POSSIBLE,
        .mem_kind = GL_MEM_ASYNC,
        .is_new = true,
        .title = "2,097,152 (+2,097,152) bytes in 2 (+2) blocks are possibly lost in new loss "
                 "record 1 of 1",
        .text = "Blocks 0x7f0000b00000 and 1 more on device 0 (NVIDIA H200)",
    };
    c = &checks_in[1];
    c->number = 7;
    c->select = GL_SELECT_CHANGED;
    c->to_buffer = true;
    snprintf(c->since, sizeof c->since, "step \"1\"");
    c->since_seq = 42;
    c->elapsed_s = 62.25;
    c->allocs = 12;
    c->in_use = (struct gl_leak_totals){2101258, 4};
    c->ignored = (struct gl_leak_totals){4096, 1};
    c->kind[GL_LEAK_POSSIBLE] = (struct gl_leak_totals){2097152, 2};
    c->suppressed = (struct gl_leak_totals){10, 1};
    c->delta = true;
    c->before_kind[GL_LEAK_DEFINITE] = (struct gl_leak_totals){1048576, 1};
    c->before_suppressed = (struct gl_leak_totals){5, 1};
    c->nrecords = 1;
    c->printed = 1;
    c->records = &check_recs[1];
    c->nkept = 1;
    /* One that printed more than the bound kept: none kept here. */
    c = &checks_in[2];
    c->number = 8;
    c->select = GL_SELECT_NEW;
    c->nrecords = 40;
    c->printed = 40;
    in.checks = checks_in;
    in.nchecks = 3;
    in.checks_dropped = 5;
}

START_TEST(test_leak_checks)
{
    checks_input();
    char *text = render();
    JSON_CHECK(
        "d['leak_checks_dropped'] == 5", "[c['number'] for c in d['leak_checks']] == [6, 7, 8]",
        "[c['mode'] for c in d['leak_checks']] == ['full', 'changed', 'new']",
        "[c['since'] for c in d['leak_checks']] == [None, 'step \"1\"', None]",
        "[c['since_allocation'] for c in d['leak_checks']] == [None, 42, None]",
        "[c['output'] for c in d['leak_checks']] == ['log', 'buffer', 'log']",
        "[c['elapsed_s'] for c in d['leak_checks']][:2] == [1.5, 62.25]",
        "[c['allocations'] for c in d['leak_checks']] == [10, 12, 0]",
        "[c['errors'] for c in d['leak_checks']] == [1, 0, 0]",
        "d['leak_checks'][0]['in_use'] == {'bytes': 1048640, 'blocks': 3}",
        "d['leak_checks'][1]['ignored'] == {'bytes': 4096, 'blocks': 1}",
        "list(d['leak_checks'][0]['leaks']) == ['definite', 'indirect', 'possible', "
        "'reachable', 'cached', 'suppressed']",
        "d['leak_checks'][0]['leaks']['reachable'] == {'bytes': 64, 'blocks': 2}",
        "d['leak_checks'][0]['before'] is None",
        "d['leak_checks'][1]['leaks']['possible'] == {'bytes': 2097152, 'blocks': 2}",
        "d['leak_checks'][1]['leaks']['suppressed'] == {'bytes': 10, 'blocks': 1}",
        "d['leak_checks'][1]['before']['definite'] == {'bytes': 1048576, 'blocks': 1}",
        "d['leak_checks'][1]['before']['suppressed'] == {'bytes': 5, 'blocks': 1}",
        "[(c['records_total'], c['records_printed'], len(c['records'])) for c in "
        "d['leak_checks']] == [(2, 1, 1), (1, 1, 1), (40, 40, 0)]",
        /* A record as the exit's records, with its lines as printed. */
        "d['leak_checks'][0]['records'][0]['index'] == 1",
        "d['leak_checks'][0]['records'][0]['kind'] == 'definite'",
        "d['leak_checks'][0]['records'][0]['error'] is True",
        "d['leak_checks'][0]['records'][0]['new'] is False",
        "d['leak_checks'][0]['records'][0]['before'] is None",
        "(d['leak_checks'][0]['records'][0]['bytes'], d['leak_checks'][0]['records'][0]"
        "['indirect_bytes'], d['leak_checks'][0]['records'][0]['blocks']) == (1048576, 64, 1)",
        "d['leak_checks'][0]['records'][0]['api'] == 'cudaMalloc'",
        "d['leak_checks'][0]['records'][0]['memory_kind'] == 'device memory'",
        "d['leak_checks'][0]['records'][0]['allocations'] == {'first': 11, 'last': 11}",
        "d['leak_checks'][0]['records'][0]['what'].startswith('1,048,640 (1,048,576 direct')",
        "d['leak_checks'][0]['records'][0]['text'] == 'Block 0x7f0000b00000 on device 0 "
        "(NVIDIA H200): \"quoted\" \\\\'",
        "[f['function'] for f in d['leak_checks'][0]['records'][0]['frames']] == ['cudaMalloc', "
        "'make_buffer(unsigned long)', None, 'main']",
        "d['leak_checks'][1]['records'][0]['new'] is True",
        "d['leak_checks'][1]['records'][0]['kind'] == 'possible'",
        "d['leak_checks'][1]['records'][0]['before'] == {'bytes': 1048576, 'blocks': 1}",
        "d['leak_checks'][1]['records'][0]['memory_kind'] == 'stream-ordered memory'",
        "d['leak_checks'][1]['records'][0]['api'] == 'cudaMalloc'");
    free(text);
}
END_TEST

/* Each Growth error of api_errors, its figures apart, suppressed or not. */
START_TEST(test_growth)
{
    struct gl_error_context ctx[3];
    memset(ctx, 0, sizeof ctx);
    ctx[0].first.kind = GL_ERR_DOUBLE_FREE;
    ctx[0].first.stack = STACK_SMALL;
    ctx[0].count = 1;
    for (int i = 1; i < 3; i++) {
        struct gl_api_error *e = &ctx[i].first;
        e->kind = GL_ERR_GROWTH;
        e->stack = STACK_MALLOC;
        e->device = -1;
        e->size = 35883008;
        e->growth.from_bytes = 34603008;
        e->growth.blocks = 7;
        e->growth.from_blocks = 2;
        e->growth.checkpoints = 5;
        e->growth.ordinal = 12;
        snprintf(e->growth.checkpoint, sizeof e->growth.checkpoint, "step");
        ctx[i].count = 1;
    }
    ctx[1].suppressed_by = &ctx[1];
    ctx[2].first.growth.framework = GL_FW_CUPY;
    ctx[2].first.growth.checkpoints = 20; /* found at 12: the run began before the first */
    in.api_contexts = ctx;
    in.napi_contexts = 3;
    char *text = render();
    JSON_CHECK(
        "len(d['growth']) == 2 and [g['api_error'] for g in d['growth']] == [1, 2]",
        "all(d['api_errors'][g['api_error']]['kind'] == 'Growth' for g in d['growth'])",
        "[g['suppressed'] for g in d['growth']] == [True, False]",
        "{k: v for k, v in d['growth'][0].items() if k not in ('what', 'frames')} == "
        "{'api_error': 1, 'suppressed': True, 'checkpoint': 'step', 'checkpoint_number': 12, "
        "'from_checkpoint_number': 7, 'checkpoints': 5, 'bytes': 35883008, 'blocks': 7, "
        "'from_bytes': 34603008, 'from_blocks': 2, 'unit': 'block', 'framework': None}",
        "d['growth'][0]['what'] == d['api_errors'][1]['what']",
        "d['growth'][0]['what'].startswith('Growth: +256,000 bytes in 1 block per checkpoint')",
        "[f['function'] for f in d['growth'][0]['frames']][1] == 'make_buffer(unsigned long)'",
        "d['growth'][1]['unit'] == 'array' and d['growth'][1]['framework'] == 'CuPy'",
        "d['growth'][1]['from_checkpoint_number'] == 0");
    free(text);
}
END_TEST

START_TEST(test_no_records)
{
    in.argc = 1;
    in.tool_argc = 0;
    char *text = render();
    JSON_CHECK("d['records'] == [] and d['devices'] == [] and d['api_errors'] == []",
               "d['argv'] == ['./app'] and d['options'] == []",
               "d['errors'] == {'errors': 0, 'contexts': 0, 'suppressed': 0, "
               "'suppressed_contexts': 0}",
               "d['suppressions_used'] == []",
               "d['summary']['in_use'] == {'bytes': 0, 'blocks': 0}",
               "d['termination'] == {'how': 'exit'}");
    free(text);
}
END_TEST

/* How an abnormal end reads: a signal with its fault and stack; _exit. */
START_TEST(test_termination)
{
    struct gl_termination t = {
        .signal = 11, .si_code = 1, .fault_addr = 0x10, .stack = STACK_SMALL, .tid = 77};
    in.termination = &t;
    char *text = render();
    JSON_CHECK("d['termination']['how'] == 'signal' and d['termination']['signal'] == 11",
               "d['termination']['name'] == 'SIGSEGV' and d['termination']['si_code'] == 1",
               "d['termination']['fault_address'] == '0x10' and d['termination']['thread'] == 77",
               "len(d['termination']['frames']) > 0");
    free(text);
    t = (struct gl_termination){.quick_exit = true, .exit_status = 3};
    text = render();
    JSON_CHECK("d['termination'] == {'how': '_exit', 'status': 3}");
    free(text);
    in.termination = NULL;
}
END_TEST

START_TEST(test_leak_check_summary)
{
    opt.leak_check = GL_LEAK_CHECK_SUMMARY;
    standard_records();
    char *text = render();
    JSON_CHECK("len(d['records']) == 3",
               "[r['shown'] for r in d['records']] == [False, False, False]",
               "[r['error'] for r in d['records']] == [False, False, False]",
               "d['errors']['errors'] == 0");
    free(text);
}
END_TEST

/* File names are bytes: one that is not UTF-8 (a Latin-1 directory) must still
 * give a JSON document, which is UTF-8. */
START_TEST(test_non_utf8_names)
{
    add_record(GL_LEAK_DEFINITE, STACK_LATIN1, 8, 1, 1, 0);
    char *text = render();
    JSON_CHECK("len(d['records'][0]['frames']) == 1",
               "d['records'][0]['frames'][0]['object'].startswith('/opt/caf')");
    free(text);
}
END_TEST

static Suite *report_json_suite(void)
{
    Suite *s = suite_create("report_json");
    TCase *tc = tcase_create("json");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_document);
    tcase_add_test(tc, test_held_through);
    tcase_add_test(tc, test_live_at_death);
    tcase_add_test(tc, test_suppressions_used);
    tcase_add_test(tc, test_escaping);
    tcase_add_test(tc, test_block_kinds);
    tcase_add_test(tc, test_no_records);
    tcase_add_test(tc, test_termination);
    tcase_add_test(tc, test_leak_check_summary);
    tcase_add_test(tc, test_non_utf8_names);
    tcase_add_test(tc, test_api_errors);
    tcase_add_test(tc, test_usage);
    tcase_add_test(tc, test_leak_checks);
    tcase_add_test(tc, test_growth);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(report_json_suite)
