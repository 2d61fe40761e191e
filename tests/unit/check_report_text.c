/* SPDX-License-Identifier: MIT */
/* lib/report/report_text.h: the Valgrind-style report, compared byte for byte.
 *
 * Everything the report prints comes through struct gl_report_input: the loss
 * records and counters are made by hand here, device names, stacks and VMM
 * mappings come from fakes. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/checkpoints.h"
#include "check/leak_check.h"
#include "check/suppress.h"
#include "common/suppressions.h"
#include "testutil.h"
#include "common/util.h"
#include "report/report_text.h"
#include "event/api.h"
#include "event/event.h"

#define PID 4242

/* ---- fakes ---- */

static const char *fake_device_name(int device, void *arg)
{
    (void)arg;
    return device == 0 ? "NVIDIA H200" : device == 2 ? "NVIDIA H100 80GB HBM3" : NULL;
}

/* Stack ids name canned stacks. */
enum {
    STACK_NONE = 0,
    STACK_MALLOC = 1,
    STACK_HOST = 2,
    STACK_ASYNC = 3,
    STACK_VMM = 4,
    STACK_DRIVER = 5,
    STACK_LONG = 6,
    STACK_SMALL = 7,
    STACK_DEEP = 8 /* 600 frames: deeper than --num-callers goes */
};

static const struct gl_frame malloc_frames[] = {
    {0x55ed7b831993, "cudaMalloc", NULL, 0, "/work/app"},
    {0x55ed7b7edbe4, "make_buffer(unsigned long)", "/src/app/app.cu", 8, "/work/app"},
    {0x7f12aa001000, NULL, NULL, 0, NULL},
    {0x55ed7b7edd26, "main", "app.cu", 19, "/work/app"},
};
static const struct gl_frame host_frames[] = {
    {0x7f0000001000, "cudaMallocHost", NULL, 0, "/usr/local/cuda/lib64/libcudart.so.13"},
    {0x401100, "pinned_staging()", "/src/io.cpp", 42, "/work/app"},
};
static const struct gl_frame async_frames[] = {
    {0x401000, "cudaMallocAsync", NULL, 0, "/work/app"},
    {0x401200, "Pool::grow(int)", "pool.cc", 120, "/work/app"},
};
static const struct gl_frame vmm_frames[] = {
    {0x7f0000002000, "cuMemCreate", NULL, 0, "/usr/lib/x86_64-linux-gnu/libcuda.so.1"},
    {0x401300, "reserve", "vmm.c", 77, NULL},
};
static const struct gl_frame driver_frames[] = {
    {0x7f0000003000, "cuMemAlloc_v2", NULL, 0, "/usr/lib/x86_64-linux-gnu/libcuda.so.1"},
    {0x401400, NULL, NULL, 0, "/work/app"},
};
static const struct gl_frame small_frames[] = {
    {0x401500, "cudaMalloc", NULL, 0, "/work/app"},
};

static unsigned max_seen;

static unsigned fake_stack_frames(uint32_t stack, struct gl_frame *out, unsigned max, void *arg)
{
    (void)arg;
    max_seen = max;
    const struct gl_frame *f = NULL;
    unsigned n = 0;
    switch (stack) {
#define CASE(id, arr)                                                                              \
    case id:                                                                                       \
        f = arr;                                                                                   \
        n = GL_ARRAY_SIZE(arr);                                                                    \
        break;
        CASE(STACK_MALLOC, malloc_frames)
        CASE(STACK_HOST, host_frames)
        CASE(STACK_ASYNC, async_frames)
        CASE(STACK_VMM, vmm_frames)
        CASE(STACK_DRIVER, driver_frames)
        CASE(STACK_SMALL, small_frames)
#undef CASE
    case STACK_LONG: {
        static struct gl_frame many[64];
        static char names[64][16];
        for (unsigned i = 0; i < 64; i++) {
            snprintf(names[i], sizeof names[i], "level%u", i);
            many[i] = (struct gl_frame){0x402000 + i * 16, names[i], "deep.c", (int)i + 1, NULL};
        }
        f = many;
        n = 64;
        break;
    }
    case STACK_DEEP: {
        static struct gl_frame deep[600];
        static char names[600][16];
        for (unsigned i = 0; i < 600; i++) {
            snprintf(names[i], sizeof names[i], "depth%u", i);
            deep[i] = (struct gl_frame){0x500000 + i * 16, names[i], "rec.c", (int)i + 1, NULL};
        }
        f = deep;
        n = 600;
        break;
    }
    default:
        return 0;
    }
    if (n > max)
        n = max;
    memcpy(out, f, n * sizeof *f);
    return n;
}

static uint64_t vmm_addrs[4];
static size_t vmm_naddrs;

static size_t fake_vmm_mappings(uint64_t handle_key, uint64_t *addrs, size_t max, void *arg)
{
    (void)arg;
    ck_assert_uint_eq(gl_key_ns(handle_key), GL_NS_VMM_HANDLE);
    for (size_t i = 0; i < vmm_naddrs && i < max; i++)
        addrs[i] = vmm_addrs[i];
    return vmm_naddrs;
}

/* ---- building the input ---- */

static struct gl_options opt;
static struct gl_leak_result lr;
static struct gl_loss_record recs[16];
static struct gl_counters_totals st;
static struct gl_report_input in;
static struct gl_supp_set supps;

static void setup(void)
{
    gl_suppressions_set_init(&supps);
    gl_options_defaults(&opt);
    memset(&lr, 0, sizeof lr);
    memset(recs, 0, sizeof recs);
    memset(&st, 0, sizeof st);
    lr.records = recs;
    vmm_naddrs = 0;
    max_seen = 0;
    in = (struct gl_report_input){
        .opt = &opt,
        .tool_version = "0.1.0",
        .command = "./app --size 1M",
        .leaks = &lr,
        .stats = &st,
        .main_tid = PID,
        .device_name = fake_device_name,
        .stack_frames = fake_stack_frames,
        .vmm_mappings = fake_vmm_mappings,
        .arg = NULL,
    };
}

/* Add a record and count it in the totals, as the leak check would. */
static void teardown(void) { gl_suppressions_set_free(&supps); }

/* Read suppressions (as file "s.supp"), hand them to the report and apply them to
 * the records added so far, as the runtime does before reporting. */
static void suppress(const char *text)
{
    char err[512];
    int rc = gl_suppressions_load_text(&supps, text, strlen(text), "s.supp", err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    in.supps = &supps;
    gl_suppress_records(&lr, &supps, fake_stack_frames, NULL);
}

static void set_option(const char *arg)
{
    char err[512];
    ck_assert_msg(gl_options_parse_arg(&opt, arg, err, sizeof err) == GL_ARG_OPTION, "%s: %s", arg,
                  err);
}

static struct gl_loss_record *add_record(enum gl_leak_kind kind, uint32_t stack, uint64_t bytes,
                                         uint64_t blocks, uint64_t seq_min, uint64_t seq_max,
                                         uint64_t key, enum gl_mem_kind mem, unsigned api,
                                         int device)
{
    struct gl_loss_record *r = &recs[lr.nrecords++];
    r->kind = kind;
    r->stack = stack;
    r->bytes = bytes;
    r->blocks = blocks;
    r->seq_min = seq_min;
    r->seq_max = seq_max;
    bool host = mem == GL_MEM_HOST_PINNED || mem == GL_MEM_HOST_REGISTERED;
    r->devices = host          ? 1ULL << GL_RECORD_HOST_BIT
                 : device >= 0 ? 1ULL << device
                               : 1ULL << GL_RECORD_UNKNOWN_DEVICE_BIT;
    r->first.key = key;
    r->first.size = bytes / blocks;
    r->first.seq = seq_min;
    r->first.kind = (uint8_t)mem;
    r->first.api = (uint16_t)api;
    r->first.device = (int16_t)device;
    r->first.tid = PID;
    r->first.stack = stack;
    lr.kind[kind].bytes += bytes;
    lr.kind[kind].blocks += blocks;
    lr.in_use.bytes += bytes;
    lr.in_use.blocks += blocks;
    return r;
}

static void usage(uint64_t allocs, uint64_t frees, uint64_t bytes, uint64_t peak)
{
    st.allocs = allocs;
    st.frees = frees;
    st.bytes_allocated = bytes;
    st.peak_bytes = peak;
}

/* The whole report, preamble and leaks, as written to a file. */
static char *render(void)
{
    int fd = tu_tmpfd();
    struct gl_out o;
    gl_out_init(&o, fd, PID);
    gl_report_text_preamble(&o, &in);
    gl_report_text_leaks(&o, &in);
    ck_assert(gl_out_flush(&o));
    char *text = tu_slurp(fd, NULL);
    close(fd);
    return text;
}

static void expect_report(const char *want)
{
    char *got = render();
    tu_assert_text_eq(got, want);
    free(got);
}

/* ---- the expected text's recurring parts ---- */

#define P "==4242== "
#define BLANK "==4242==\n"
#define PREAMBLE                                                                                   \
    P "gpuleak-0.1.0, a GPU memory leak detector\n" P "Command: ./app --size 1M\n" BLANK

/* The second line of GPU MEMORY SUMMARY is spelled as in issue 2's example report,
 * "==4242==   total GPU usage:", which puts its colon one column left of the other
 * summary lines' (Valgrind's "total heap usage" is one letter longer). */
#define TOTAL_USAGE "  total GPU usage: "
#define IMPORTED " of which imported: "

#define GPU_SUMMARY(in_use_bytes, in_use_blocks, allocs, frees, bytes, peak)                       \
    P "GPU MEMORY SUMMARY:\n" P "    in use at exit: " in_use_bytes " bytes in " in_use_blocks     \
      " blocks\n" P TOTAL_USAGE allocs " allocs, " frees " frees, " bytes                          \
      " bytes allocated, peak " peak " bytes\n" BLANK

#define LEAK_SUMMARY(def, ind, pos, reach, cached)                                                 \
    P "LEAK SUMMARY:\n" P "   definitely lost: " def "\n" P "   indirectly lost: " ind "\n" P      \
      "     possibly lost: " pos "\n" P "   still reachable: " reach "\n" P                        \
      "            cached: " cached "\n" P "        suppressed: 0 bytes in 0 blocks\n"
#define NONE "0 bytes in 0 blocks"
/* The same with a "live at death" line, which only a saved log of a process that
 * died has. */
#define LEAK_SUMMARY_DEATH(def, ind, pos, reach, cached, death)                                    \
    P "LEAK SUMMARY:\n" P "   definitely lost: " def "\n" P "   indirectly lost: " ind "\n" P      \
      "     possibly lost: " pos "\n" P "   still reachable: " reach "\n" P                        \
      "            cached: " cached "\n" P "     live at death: " death "\n" P                     \
      "        suppressed: 0 bytes in 0 blocks\n"

#define ERRORS(n) P "ERROR SUMMARY: " n " errors from " n " contexts (suppressed: 0 from 0)\n"

#define LEAK_SUMMARY_S(def, ind, pos, reach, cached, supp)                                         \
    P "LEAK SUMMARY:\n" P "   definitely lost: " def "\n" P "   indirectly lost: " ind "\n" P      \
      "     possibly lost: " pos "\n" P "   still reachable: " reach "\n" P                        \
      "            cached: " cached "\n" P "        suppressed: " supp "\n"
#define ERRORS_S(n, s)                                                                             \
    P "ERROR SUMMARY: " n " errors from " n " contexts (suppressed: " s " from " s ")\n"

/* The canned stacks' lines. */
#define SMALL_AT P "   at 0x401500: cudaMalloc (in /work/app)\n"
#define MALLOC_AT                                                                                  \
    P "   at 0x55ED7B831993: cudaMalloc (in /work/app)\n" P                                        \
      "   by 0x55ED7B7EDBE4: make_buffer(unsigned long) (app.cu:8)\n" P                            \
      "   by 0x7F12AA001000: ???\n" P "   by 0x55ED7B7EDD26: main (app.cu:19)\n"
#define DEV_BLOCK(addr, seq)                                                                       \
    P " Block " addr " on device 0 (NVIDIA H200): device memory from cudaMalloc, allocation #" seq \
      "\n"

/* ---- reports ---- */

START_TEST(test_full_report_one_record)
{
    add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 1048576, 1, 11, 11, 0x7fa473e00000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    usage(11, 10, 1089536, 1048576);
    expect_report(
        PREAMBLE P
        "1,048,576 bytes in 1 blocks are definitely lost in loss record 1 of 1\n" P
        "   at 0x55ED7B831993: cudaMalloc (in /work/app)\n" P
        "   by 0x55ED7B7EDBE4: make_buffer(unsigned long) (app.cu:8)\n" P
        "   by 0x7F12AA001000: ???\n" P "   by 0x55ED7B7EDD26: main (app.cu:19)\n" P
        " Block 0x7fa473e00000 on device 0 (NVIDIA H200): device memory from cudaMalloc, "
        "allocation #11\n" BLANK GPU_SUMMARY("1,048,576", "1", "11", "10", "1,089,536", "1,048,576")
            LEAK_SUMMARY("1,048,576 bytes in 1 blocks", NONE, NONE, NONE, NONE) BLANK ERRORS("1"));
    ck_assert_uint_eq(max_seen, 12); /* --num-callers */
}
END_TEST

/* --scan-device: a record that leads lost blocks shows Valgrind's split;
 * records sort by their total. */
START_TEST(test_direct_and_indirect)
{
    struct gl_loss_record *r = add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 4096, 1, 11, 11,
                                          0x7fa473e00000, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, 0);
    r->indirect_bytes = 2097152;
    add_record(GL_LEAK_INDIRECT, STACK_SMALL, 2097152, 2, 12, 13, 0x7fa474000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    usage(13, 10, 2101248, 2101248);
    set_option("--show-leak-kinds=all");
    char *got = render();
    ck_assert_msg(strstr(got,
                         P "2,101,248 (4,096 direct, 2,097,152 indirect) bytes in 1 blocks are "
                           "definitely lost in loss record 1 of 2\n"),
                  "%s", got);
    ck_assert_msg(strstr(got, P "2,097,152 bytes in 2 blocks are indirectly lost in loss record 2 "
                                "of 2\n"),
                  "%s", got);
    ck_assert_msg(strstr(got, P "   indirectly lost: 2,097,152 bytes in 2 blocks\n"), "%s", got);
    free(got);
}
END_TEST

/* A device block held only through a lost host block: indirectly lost, and
 * the record names the host block and who allocated it. */
static bool holder_frame(uint64_t ip, struct gl_frame *out, void *arg)
{
    (void)arg;
    *out = (struct gl_frame){
        .ip = ip, .function = "make_holder()", .file = "/src/reach.cu", .line = 31};
    return ip == 0x401234;
}

/* The report of every kind, with these holders of indirectly lost blocks and
 * the allocating code named by frame. */
static char *render_holders(struct gl_reach_holder *held, size_t n,
                            bool (*frame)(uint64_t, struct gl_frame *, void *))
{
    struct gl_reachability reach = {.available = true, .held = held, .nheld = n};
    in.reach = &reach;
    in.code_frame = frame;
    set_option("--show-leak-kinds=all");
    char *got = render();
    in.reach = NULL;
    in.code_frame = NULL;
    return got;
}

START_TEST(test_held_through_lost_host_block)
{
    add_record(GL_LEAK_INDIRECT, STACK_SMALL, 4096, 1, 12, 12, 0x7fa474000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    struct gl_reach_holder held = {.key = 0x7fa474000000, .bytes = 96, .caller = 0x401234};
    usage(12, 11, 4096, 4096);
    char *got = render_holders(&held, 1, holder_frame);
    ck_assert_msg(strstr(got, P " Held only through a lost host block of 96 bytes, allocated by "
                                "make_holder() (reach.cu:31)\n"),
                  "%s", got);
    free(got);
}
END_TEST

/* Code without symbols that allocated the holder (a CUDA library keeping a
 * block for itself): named by its module, as a frame of a stack is. */
static bool library_frame(uint64_t ip, struct gl_frame *out, void *arg)
{
    (void)arg;
    *out = (struct gl_frame){.ip = ip,
                             .function = ip == 0x401234 ? "cufft_internal" : NULL,
                             .object = "/usr/lib/libcufft.so.12"};
    return true;
}

START_TEST(test_held_through_library_memory)
{
    add_record(GL_LEAK_INDIRECT, STACK_SMALL, 6967984, 1, 12, 12, 0x7fa474000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_INDIRECT, STACK_SMALL, 4096, 1, 13, 13, 0x7fa475000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    struct gl_reach_holder held[] = {{.key = 0x7fa474000000, .bytes = 56, .caller = 0x7f52ce2b6ac},
                                     {.key = 0x7fa475000000, .bytes = 8, .caller = 0x401234}};
    usage(13, 11, 6972080, 6972080);
    char *got = render_holders(held, 2, library_frame);
    ck_assert_msg(strstr(got, P " Held only through a lost host block of 56 bytes, allocated at "
                                "0x7F52CE2B6AC (in /usr/lib/libcufft.so.12)\n"),
                  "%s", got);
    ck_assert_msg(strstr(got, P " Held only through a lost host block of 8 bytes, allocated by "
                                "cufft_internal (in /usr/lib/libcufft.so.12)\n"),
                  "%s", got);
    free(got);
}
END_TEST

/* A record a Cached rule reclassified names the rule: who holds the memory. */
START_TEST(test_cached_record_names_its_holder)
{
    struct gl_loss_record *r = add_record(GL_LEAK_CACHED, STACK_SMALL, 33554432, 1, 9, 9,
                                          0x7f4ad2000000, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, 0);
    struct gl_supp rule = {.name = "PyTorch: cuBLAS workspace, kept for the whole run",
                           .file = "/usr/share/gpuleak/frameworks.supp",
                           .line = 73,
                           .kind = GL_SUPP_CACHED};
    r->cached_by = &rule;
    usage(9, 8, 33554432, 33554432);
    set_option("--show-leak-kinds=all");
    char *got = render();
    ck_assert_msg(strstr(got, "are cached in loss record 1 of 1\n"), "%s", got);
    ck_assert_msg(strstr(got, P " Held by PyTorch: cuBLAS workspace, kept for the whole run "
                                "(frameworks.supp:73)\n" BLANK),
                  "%s", got);
    free(got);
}
END_TEST

START_TEST(test_record_of_many_blocks)
{
    add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 409600, 100, 3, 102, 0x7fd1bbe00000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 4096000000, 1001, 200, 5000, 0x7fd200000000,
               GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, 2);
    usage(1200, 99, 4096409600, 4096409600);
    expect_report(
        PREAMBLE P
        "409,600 bytes in 100 blocks are definitely lost in loss record 1 of 2\n" P
        "   at 0x55ED7B831993: cudaMalloc (in /work/app)\n" P
        "   by 0x55ED7B7EDBE4: make_buffer(unsigned long) (app.cu:8)\n" P
        "   by 0x7F12AA001000: ???\n" P "   by 0x55ED7B7EDD26: main (app.cu:19)\n" P
        " Blocks 0x7fd1bbe00000 and 99 more on device 0 (NVIDIA H200): device memory from "
        "cudaMalloc, allocations #3 to #102\n" BLANK P
        "4,096,000,000 bytes in 1,001 blocks are definitely lost in loss record 2 of 2\n" P
        "   at 0x401500: cudaMalloc (in /work/app)\n" P
        " Blocks 0x7fd200000000 and 1,000 more on device 2 (NVIDIA H100 80GB HBM3): device "
        "memory from cudaMalloc, allocations #200 to #5000\n" BLANK GPU_SUMMARY(
            "4,096,409,600", "1,101", "1,200", "99", "4,096,409,600", "4,096,409,600")
            LEAK_SUMMARY("4,096,409,600 bytes in 1,101 blocks", NONE, NONE, NONE, NONE)
                BLANK ERRORS("2"));
}
END_TEST

START_TEST(test_host_async_vmm_thread)
{
    add_record(GL_LEAK_DEFINITE, STACK_HOST, 100, 1, 5, 5, 0x7fff00001000, GL_MEM_HOST_PINNED,
               GL_API_cuMemAllocHost_v2, -1);
    struct gl_loss_record *a = add_record(GL_LEAK_DEFINITE, STACK_ASYNC, 200, 1, 7, 7,
                                          0x7f0000800000, GL_MEM_ASYNC, GL_API_cuMemAllocAsync, 0);
    a->first.aux = 0x5eed000; /* the stream */
    struct gl_loss_record *v =
        add_record(GL_LEAK_DEFINITE, STACK_VMM, 2097152, 1, 2, 2,
                   gl_key_make(GL_NS_VMM_HANDLE, 0x1234), GL_MEM_VMM, GL_API_cuMemCreate, 0);
    v->first.flags = GL_BLK_RELEASED;
    v->first.tid = 4300; /* another thread */
    vmm_addrs[0] = 0x7f2000000000;
    vmm_naddrs = 1;
    usage(3, 0, 2097452, 2097452);
    expect_report(
        PREAMBLE P
        "100 bytes in 1 blocks are definitely lost in loss record 1 of 3\n" P
        "   at 0x7F0000001000: cudaMallocHost (in /usr/local/cuda/lib64/libcudart.so.13)\n" P
        "   by 0x401100: pinned_staging() (io.cpp:42)\n" P
        " Block 0x7fff00001000 in host memory: pinned host memory from cudaMallocHost, "
        "allocation #5\n" BLANK P
        "200 bytes in 1 blocks are definitely lost in loss record 2 of 3\n" P
        "   at 0x401000: cudaMallocAsync (in /work/app)\n" P
        "   by 0x401200: Pool::grow(int) (pool.cc:120)\n" P
        " Block 0x7f0000800000 on device 0 (NVIDIA H200): stream-ordered memory from "
        "cudaMallocAsync on stream 0x5eed000, allocation #7\n" BLANK P
        "2,097,152 bytes in 1 blocks are definitely lost in loss record 3 of 3\n" P
        "   at 0x7F0000002000: cuMemCreate (in /usr/lib/x86_64-linux-gnu/libcuda.so.1)\n" P
        "   by 0x401300: reserve (vmm.c:77)\n" P
        " Handle 0x1234 on device 0 (NVIDIA H200): VMM physical memory from cuMemCreate, "
        "allocation #2, thread 4300, released, still mapped at 0x7f2000000000\n" BLANK GPU_SUMMARY(
            "2,097,452", "3", "3", "0", "2,097,452", "2,097,452")
            LEAK_SUMMARY("2,097,452 bytes in 3 blocks", NONE, NONE, NONE, NONE) BLANK ERRORS("3"));
}
END_TEST

/* Only the block line varies here: render one record and return that line (the
 * one whose text starts with a single space). */
static char *block_line_of(void)
{
    char *text = render();
    char *copy = NULL;
    for (char *line = text; *line; line = strchr(line, '\n') + 1) {
        if (strncmp(line, P " ", strlen(P) + 1) == 0 && line[strlen(P) + 1] != ' ') {
            size_t len = strcspn(line, "\n");
            copy = strndup(line, len);
            break;
        }
    }
    ck_assert_msg(copy != NULL, "no block line in:\n%s", text);
    free(text);
    return copy;
}

START_TEST(test_block_line_variants)
{
    struct gl_loss_record *r =
        add_record(GL_LEAK_DEFINITE, STACK_ASYNC, 64, 1, 9, 9, 0x7f0000a00000, GL_MEM_ASYNC,
                   GL_API_cuMemAllocAsync_ptsz, 1);
    char *line;
    /* A device without a name; the default streams. */
    r->first.aux = 0;
    line = block_line_of();
    ck_assert_str_eq(line, P " Block 0x7f0000a00000 on device 1: stream-ordered memory from "
                             "cudaMallocAsync on the default stream, allocation #9");
    free(line);
    r->first.aux = 1;
    line = block_line_of();
    ck_assert_ptr_nonnull(
        strstr(line, "cudaMallocAsync on the legacy default stream, allocation #9"));
    free(line);
    r->first.aux = 2;
    line = block_line_of();
    ck_assert_ptr_nonnull(
        strstr(line, "cudaMallocAsync on the per-thread default stream, allocation #9"));
    free(line);

    /* An unknown device. */
    r->first.aux = 0x10;
    r->first.device = -1;
    r->devices = 1ULL << GL_RECORD_UNKNOWN_DEVICE_BIT;
    line = block_line_of();
    ck_assert_str_eq(line,
                     P " Block 0x7f0000a00000 on an unknown device: stream-ordered memory from "
                       "cudaMallocAsync on stream 0x10, allocation #9");
    free(line);

    /* No stack: the driver entry point names the API. */
    r->stack = STACK_NONE;
    line = block_line_of();
    ck_assert_str_eq(line,
                     P " Block 0x7f0000a00000 on an unknown device: stream-ordered memory from "
                       "cuMemAllocAsync_ptsz on stream 0x10, allocation #9");
    free(line);

    /* Several devices, and a size that is not known. */
    r->kind = GL_LEAK_DEFINITE;
    r->first.kind = GL_MEM_IPC;
    r->first.api = GL_API_cuIpcOpenMemHandle_v2;
    r->blocks = 3;
    r->seq_max = 12;
    r->size_unknown = 2;
    r->devices = (1ULL << 0) | (1ULL << 3) | (1ULL << GL_RECORD_UNKNOWN_DEVICE_BIT);
    line = block_line_of();
    ck_assert_str_eq(line,
                     P " Blocks 0x7f0000a00000 and 2 more on devices 0, 3, unknown: IPC-imported "
                       "memory from cuIpcOpenMemHandle_v2, allocations #9 to #12, size unknown");
    free(line);
}
END_TEST

START_TEST(test_vmm_variants)
{
    struct gl_loss_record *v =
        add_record(GL_LEAK_DEFINITE, STACK_VMM, 4096, 1, 4, 4, gl_key_make(GL_NS_VMM_HANDLE, 0xabc),
                   GL_MEM_VMM, GL_API_cuMemCreate, 2);
    char *line = block_line_of();
    ck_assert_str_eq(line,
                     P " Handle 0xabc on device 2 (NVIDIA H100 80GB HBM3): VMM physical memory "
                       "from cuMemCreate, allocation #4, not mapped");
    free(line);
    vmm_addrs[0] = 0x7f3000000000;
    vmm_addrs[1] = 0x7f3100000000;
    vmm_addrs[2] = 0x7f3200000000;
    vmm_naddrs = 3;
    line = block_line_of();
    ck_assert_str_eq(line, P
                     " Handle 0xabc on device 2 (NVIDIA H100 80GB HBM3): VMM physical memory "
                     "from cuMemCreate, allocation #4, still mapped at 0x7f3000000000 and 2 more");
    free(line);
    v->first.flags = GL_BLK_RELEASED;
    vmm_naddrs = 0;
    line = block_line_of();
    ck_assert_str_eq(line,
                     P " Handle 0xabc on device 2 (NVIDIA H100 80GB HBM3): VMM physical memory "
                       "from cuMemCreate, allocation #4, released, not mapped");
    free(line);
}
END_TEST

START_TEST(test_arrays_and_other_threads)
{
    struct gl_loss_record *r =
        add_record(GL_LEAK_DEFINITE, STACK_DRIVER, 40000, 1, 6, 6, gl_key_make(GL_NS_ARRAY, 0xa1a1),
                   GL_MEM_ARRAY, GL_API_cuArrayCreate_v2, 0);
    r->first.tid = 777;
    char *text = render();
    ck_assert_ptr_nonnull(
        strstr(text, P "   at 0x7F0000003000: cuMemAlloc_v2 (in /usr/lib/x86_64-linux-gnu/"
                       "libcuda.so.1)\n" P "   by 0x401400: ??? (in /work/app)\n" P
                       " Array 0xa1a1 on device 0 (NVIDIA H200): CUDA array from "
                       "cuMemAlloc_v2, allocation #6, thread 777\n"));
    free(text);
    /* Records of several blocks name no thread: they may come from several. */
    r->blocks = 2;
    r->seq_max = 8;
    text = render();
    ck_assert_ptr_nonnull(strstr(text,
                                 P " Arrays 0xa1a1 and 1 more on device 0 (NVIDIA H200): CUDA "
                                   "array from cuMemAlloc_v2, allocations #6 to #8\n"));
    free(text);
}
END_TEST

START_TEST(test_num_callers)
{
    opt.num_callers = 3;
    add_record(GL_LEAK_DEFINITE, STACK_LONG, 8, 1, 1, 1, 0x7f0000000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    char *text = render();
    ck_assert_uint_eq(max_seen, 3);
    ck_assert_ptr_nonnull(strstr(text, P "   at 0x402000: level0 (deep.c:1)\n" P
                                         "   by 0x402010: level1 (deep.c:2)\n" P
                                         "   by 0x402020: level2 (deep.c:3)\n" P
                                         " Block 0x7f0000000000 on device 0 (NVIDIA H200): device "
                                         "memory from cuMemAlloc_v2, allocation #1\n"));
    free(text);
    opt.num_callers = 64;
    text = render();
    ck_assert_uint_eq(max_seen, 64);
    ck_assert_ptr_nonnull(strstr(text, P "   by 0x4023F0: level63 (deep.c:64)\n"));
    free(text);
}
END_TEST

/* Up to Valgrind's 500: the report's room for frames follows the option. */
START_TEST(test_num_callers_deep)
{
    add_record(GL_LEAK_DEFINITE, STACK_DEEP, 8, 1, 1, 1, 0x7f0000000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    char *text = render(); /* the default */
    ck_assert_uint_eq(max_seen, 12);
    ck_assert_ptr_nonnull(strstr(text, P "   by 0x5000B0: depth11 (rec.c:12)\n" P " Block "));
    free(text);
    opt.num_callers = 300;
    text = render();
    ck_assert_uint_eq(max_seen, 300);
    unsigned lines = 0;
    for (const char *p = text; (p = strstr(p, ": depth")); p++)
        lines++;
    ck_assert_uint_eq(lines, 300);
    ck_assert_ptr_nonnull(strstr(text, P "   at 0x500000: depth0 (rec.c:1)\n"));
    ck_assert_ptr_nonnull(strstr(text, P "   by 0x5012B0: depth299 (rec.c:300)\n" P " Block "));
    free(text);
    opt.num_callers = GL_MAX_CALLERS;
    text = render();
    ck_assert_ptr_nonnull(strstr(text, P "   by 0x501F30: depth499 (rec.c:500)\n" P " Block "));
    free(text);
}
END_TEST

START_TEST(test_no_stack)
{
    add_record(GL_LEAK_DEFINITE, STACK_NONE, 512, 1, 1, 1, 0x7f0000000000, GL_MEM_MANAGED,
               GL_API_cuMemAllocManaged, 0);
    usage(1, 0, 512, 512);
    expect_report(
        PREAMBLE P
        "512 bytes in 1 blocks are definitely lost in loss record 1 of 1\n" P
        "   (no stack recorded)\n" P
        " Block 0x7f0000000000 on device 0 (NVIDIA H200): managed memory from "
        "cuMemAllocManaged, allocation #1\n" BLANK GPU_SUMMARY("512", "1", "1", "0", "512", "512")
            LEAK_SUMMARY("512 bytes in 1 blocks", NONE, NONE, NONE, NONE) BLANK ERRORS("1"));
}
END_TEST

START_TEST(test_leak_check_summary)
{
    opt.leak_check = GL_LEAK_CHECK_SUMMARY;
    add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 1000, 2, 1, 2, 0x7f0000000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_POSSIBLE, STACK_SMALL, 3000, 1, 3, 3, 0x7f0000100000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    usage(5, 2, 6000, 5000);
    expect_report(
        PREAMBLE GPU_SUMMARY("4,000", "3", "5", "2", "6,000", "5,000")
            LEAK_SUMMARY("1,000 bytes in 2 blocks", NONE, "3,000 bytes in 1 blocks", NONE, NONE) P
        "Rerun with --leak-check=full to see details of leaked memory\n" BLANK ERRORS("0"));
    ck_assert_uint_eq(gl_report_text_error_count(&in), 0);
}
END_TEST

START_TEST(test_leak_check_no)
{
    opt.leak_check = GL_LEAK_CHECK_NO;
    add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 1000, 2, 1, 2, 0x7f0000000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    usage(2, 0, 1000, 1000);
    expect_report(
        PREAMBLE GPU_SUMMARY("1,000", "2", "2", "0", "1,000", "1,000") P
        "For a detailed leak analysis, rerun with: --leak-check=full\n" BLANK ERRORS("0"));
}
END_TEST

START_TEST(test_quiet)
{
    opt.quiet = true;
    opt.show_leak_kinds = GL_LEAK_KINDS_ALL;
    add_record(GL_LEAK_REACHABLE, STACK_SMALL, 10, 1, 1, 1, 0x7f0000000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 20, 1, 2, 2, 0x7f0000100000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_CACHED, STACK_SMALL, 30, 1, 3, 3, 0x7f0000200000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_POSSIBLE, STACK_SMALL, 40, 1, 4, 4, 0x7f0000300000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    usage(4, 0, 100, 100);
    /* Only the errors: no preamble, no summaries. */
    expect_report(P
                  "20 bytes in 1 blocks are definitely lost in loss record 2 of 4\n" P
                  "   at 0x401500: cudaMalloc (in /work/app)\n" P
                  " Block 0x7f0000100000 on device 0 (NVIDIA H200): device memory from cudaMalloc, "
                  "allocation #2\n" BLANK P
                  "40 bytes in 1 blocks are possibly lost in loss record 4 of 4\n" P
                  "   at 0x401500: cudaMalloc (in /work/app)\n" P
                  " Block 0x7f0000300000 on device 0 (NVIDIA H200): device memory from cudaMalloc, "
                  "allocation #4\n" BLANK);
    ck_assert_uint_eq(gl_report_text_error_count(&in), 2);
}
END_TEST

START_TEST(test_quiet_without_leaks_is_silent)
{
    opt.quiet = true;
    usage(3, 3, 300, 200);
    expect_report("");
}
END_TEST

START_TEST(test_hidden_kinds)
{
    /* Default --show-leak-kinds=definite,possible; records numbered among all. */
    add_record(GL_LEAK_REACHABLE, STACK_SMALL, 100, 1, 1, 1, 0x7f0000000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 200, 1, 2, 2, 0x7f0000100000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_CACHED, STACK_SMALL, 300, 3, 3, 5, 0x7f0000200000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    usage(5, 0, 600, 600);
    expect_report(
        PREAMBLE P
        "200 bytes in 1 blocks are definitely lost in loss record 2 of 3\n" P
        "   at 0x401500: cudaMalloc (in /work/app)\n" P
        " Block 0x7f0000100000 on device 0 (NVIDIA H200): device memory from cudaMalloc, "
        "allocation #2\n" BLANK GPU_SUMMARY("600", "5", "5", "0", "600", "600") LEAK_SUMMARY(
            "200 bytes in 1 blocks", NONE, NONE, "100 bytes in 1 blocks", "300 bytes in 3 blocks") P
        "Still reachable, cached blocks are not shown.\n" P
        "To see them, rerun with: --leak-check=full --show-leak-kinds=all\n" BLANK ERRORS("1"));
}
END_TEST

START_TEST(test_show_leak_kinds_selects_records)
{
    opt.show_leak_kinds = GL_LEAK_KIND_BIT(GL_LEAK_CACHED);
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 200, 1, 2, 2, 0x7f0000100000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_CACHED, STACK_SMALL, 300, 1, 3, 3, 0x7f0000200000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    usage(2, 0, 500, 500);
    expect_report(
        PREAMBLE P
        "300 bytes in 1 blocks are cached in loss record 2 of 2\n" P
        "   at 0x401500: cudaMalloc (in /work/app)\n" P
        " Block 0x7f0000200000 on device 0 (NVIDIA H200): device memory from cudaMalloc, "
        "allocation #3\n" BLANK GPU_SUMMARY("500", "2", "2", "0", "500", "500")
            LEAK_SUMMARY("200 bytes in 1 blocks", NONE, NONE, NONE, "300 bytes in 1 blocks") P
        "Definitely lost blocks are not shown.\n" P
        "To see them, rerun with: --leak-check=full --show-leak-kinds=all\n" BLANK ERRORS(
            "1")); /* a hidden definite leak is still an error */
}
END_TEST

START_TEST(test_no_blocks)
{
    usage(12, 12, 4096, 2048);
    expect_report(PREAMBLE GPU_SUMMARY("0", "0", "12", "12", "4,096", "2,048") P
                  "All GPU memory was freed -- no leaks are possible\n" BLANK ERRORS("0"));
}
END_TEST

START_TEST(test_imported_memory)
{
    add_record(GL_LEAK_DEFINITE, STACK_NONE, 8192, 1, 1, 1, 0x7f3000000000, GL_MEM_IPC,
               GL_API_cuIpcOpenMemHandle_v2, 0);
    lr.imported.bytes = 8192;
    lr.imported.blocks = 1;
    usage(1, 0, 0, 0);
    char *text = render();
    ck_assert_ptr_nonnull(
        strstr(text, P "    in use at exit: 8,192 bytes in 1 blocks\n" P IMPORTED
                       "8,192 bytes in 1 blocks, opened from other processes\n" P TOTAL_USAGE
                       "1 allocs, 0 frees, 0 bytes allocated, peak 0 bytes\n"));
    free(text);
}
END_TEST

START_TEST(test_error_count)
{
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 1, 1, 1, 1, 0x1000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 2, 1, 2, 2, 0x2000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_POSSIBLE, STACK_SMALL, 3, 1, 3, 3, 0x3000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_REACHABLE, STACK_SMALL, 4, 1, 4, 4, 0x4000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_INDIRECT, STACK_SMALL, 5, 1, 5, 5, 0x5000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_CACHED, STACK_SMALL, 6, 1, 6, 6, 0x6000, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2,
               0);
    ck_assert_uint_eq(gl_report_text_error_count(&in), 3);
    char *text = render();
    ck_assert_ptr_nonnull(strstr(text, ERRORS("3")));
    ck_assert_ptr_nonnull(strstr(text, "are definitely lost in loss record 1 of 6\n"));
    ck_assert_ptr_nonnull(strstr(text, "are definitely lost in loss record 2 of 6\n"));
    ck_assert_ptr_nonnull(strstr(text, "are possibly lost in loss record 3 of 6\n"));
    ck_assert_ptr_null(strstr(text, "in loss record 4 of 6\n")); /* reachable: hidden */
    ck_assert_ptr_null(strstr(text, "in loss record 5 of 6\n")); /* indirect: hidden */
    ck_assert_ptr_null(strstr(text, "in loss record 6 of 6\n")); /* cached: hidden */
    free(text);
    opt.leak_check = GL_LEAK_CHECK_SUMMARY;
    ck_assert_uint_eq(gl_report_text_error_count(&in), 0);
    opt.leak_check = GL_LEAK_CHECK_NO;
    ck_assert_uint_eq(gl_report_text_error_count(&in), 0);
}
END_TEST

START_TEST(test_preamble_quiet)
{
    opt.quiet = true;
    int fd = tu_tmpfd();
    struct gl_out o;
    gl_out_init(&o, fd, PID);
    gl_report_text_preamble(&o, &in);
    gl_out_flush(&o);
    char *text = tu_slurp(fd, NULL);
    ck_assert_str_eq(text, "");
    free(text);
    close(fd);
}
END_TEST

/* Valgrind aligns the colons of its summary lines:
 *     ==PID==     in use at exit: ...
 *     ==PID==   total heap usage: ...
 *     ==PID==    definitely lost: ...
 * gpuleak's summaries should line up the same way. */
START_TEST(test_summary_colons_aligned)
{
    add_record(GL_LEAK_DEFINITE, STACK_NONE, 8192, 1, 1, 1, 0x7f3000000000, GL_MEM_IPC,
               GL_API_cuIpcOpenMemHandle_v2, 0);
    lr.imported.bytes = 8192;
    lr.imported.blocks = 1;
    usage(1, 0, 0, 0);
    char *text = render();
    /* All but "total GPU usage:", spelled as issue 2's example (see TOTAL_USAGE). */
    static const char *const labels[] = {
        "in use at exit:", "of which imported:", "definitely lost:", "indirectly lost:",
        "possibly lost:",  "still reachable:",   "cached:",          "suppressed:",
    };
    long want = -1;
    char bad[1024] = "";
    for (size_t i = 0; i < GL_ARRAY_SIZE(labels); i++) {
        char *at = strstr(text, labels[i]);
        ck_assert_msg(at != NULL, "no '%s' line", labels[i]);
        char *line = at;
        while (line > text && line[-1] != '\n')
            line--;
        long col = (long)(at - line) + (long)strlen(labels[i]) - 1;
        if (want < 0)
            want = col;
        if (col != want)
            snprintf(bad + strlen(bad), sizeof bad - strlen(bad), " '%s' at %ld;", labels[i], col);
    }
    ck_assert_msg(bad[0] == '\0', "colons not at column %ld (in use at exit's):%s", want, bad);
    free(text);
}
END_TEST

/* ---- live at death: blocks of a saved log whose process died ---- */

/* The LEAK SUMMARY line appears when there are such blocks, its colon aligned
 * with the others', and never otherwise (every other report stays as it was). */
START_TEST(test_live_at_death_summary_only_when_nonzero)
{
    opt.show_leak_kinds = GL_LEAK_KINDS_ALL;
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 200, 1, 2, 2, 0x7f0000100000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    usage(2, 0, 200, 200);
    char *text = render();
    ck_assert_msg(strstr(text, "live at death") == NULL, "without such blocks:\n%s", text);
    ck_assert_ptr_nonnull(
        strstr(text, LEAK_SUMMARY("200 bytes in 1 blocks", NONE, NONE, NONE, NONE)));
    free(text);

    add_record(GL_LEAK_DEATH, STACK_SMALL, 4096, 1, 3, 3, 0x7f0000300000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    text = render();
    ck_assert_msg(strstr(text, LEAK_SUMMARY_DEATH("200 bytes in 1 blocks", NONE, NONE, NONE, NONE,
                                                  "4,096 bytes in 1 blocks")) != NULL,
                  "no live at death line in\n%s", text);
    const char *def = strstr(text, "definitely lost:"), *death = strstr(text, "live at death:");
    ck_assert(def && death);
    long def_col = 0, death_col = 0;
    for (const char *c = def; c > text && c[-1] != '\n'; c--)
        def_col++;
    for (const char *c = death; c > text && c[-1] != '\n'; c--)
        death_col++;
    ck_assert_int_eq(def_col + (long)strlen("definitely lost"),
                     death_col + (long)strlen("live at death"));
    free(text);
}
END_TEST

/* Its loss records read "are live at death", shown and counted as errors by
 * the kind sets like any other kind. */
START_TEST(test_live_at_death_record)
{
    opt.show_leak_kinds = GL_LEAK_KINDS_ALL;
    opt.errors_for_leak_kinds = GL_LEAK_KIND_BIT(GL_LEAK_DEATH);
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 200, 1, 2, 2, 0x7f0000100000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_DEATH, STACK_SMALL, 4096, 1, 3, 3, 0x7f0000300000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    usage(3, 1, 4396, 4296);
    expect_report(PREAMBLE P
                  "200 bytes in 1 blocks are definitely lost in loss record 1 of 2\n" P
                  "   at 0x401500: cudaMalloc (in /work/app)\n" P
                  " Block 0x7f0000100000 on device 0 (NVIDIA H200): device memory from cudaMalloc, "
                  "allocation #2\n" BLANK P
                  "4,096 bytes in 1 blocks are live at death in loss record 2 of 2\n" P
                  "   at 0x401500: cudaMalloc (in /work/app)\n" P
                  " Block 0x7f0000300000 on device 0 (NVIDIA H200): device memory from cudaMalloc, "
                  "allocation #3\n" BLANK GPU_SUMMARY("4,296", "2", "3", "1", "4,396", "4,296")
                      LEAK_SUMMARY_DEATH("200 bytes in 1 blocks", NONE, NONE, NONE, NONE,
                                         "4,096 bytes in 1 blocks") BLANK ERRORS("1"));
    ck_assert_uint_eq(gl_report_text_error_count(&in), 1);
}
END_TEST

/* Hidden, it is named in the hint like the other kinds. */
START_TEST(test_live_at_death_hidden)
{
    opt.show_leak_kinds = GL_LEAK_KIND_BIT(GL_LEAK_DEFINITE);
    opt.errors_for_leak_kinds = GL_LEAK_KIND_BIT(GL_LEAK_DEFINITE);
    add_record(GL_LEAK_DEATH, STACK_SMALL, 4096, 1, 3, 3, 0x7f0000300000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    usage(3, 2, 4396, 4296);
    expect_report(
        PREAMBLE GPU_SUMMARY("4,096", "1", "3", "2", "4,396", "4,296")
            LEAK_SUMMARY_DEATH(NONE, NONE, NONE, NONE, NONE, "4,096 bytes in 1 blocks") P
        "Live at death blocks are not shown.\n" P
        "To see them, rerun with: --leak-check=full --show-leak-kinds=all\n" BLANK ERRORS("0"));
}
END_TEST

/* A delta check whose reference had such blocks shows the line going to zero. */
START_TEST(test_live_at_death_delta_to_zero)
{
    opt.show_leak_kinds = GL_LEAK_KINDS_ALL;
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 200, 1, 2, 2, 0x7f0000100000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    struct gl_leak_ref ref;
    memset(&ref, 0, sizeof ref);
    ref.kind[GL_LEAK_DEATH] = (struct gl_leak_totals){4096, 1};
    in.delta = &ref;
    int fd = tu_tmpfd();
    struct gl_out o;
    gl_out_init(&o, fd, PID);
    gl_report_text_check(&o, &in, "check");
    ck_assert(gl_out_flush(&o));
    char *text = tu_slurp(fd, NULL);
    close(fd);
    ck_assert_msg(strstr(text, P "     live at death: 0 (-4,096) bytes in 0 (-1) blocks\n") != NULL,
                  "%s", text);
    free(text);
    /* Zero before and now: no line. */
    ref.kind[GL_LEAK_DEATH] = (struct gl_leak_totals){0, 0};
    fd = tu_tmpfd();
    gl_out_init(&o, fd, PID);
    gl_report_text_check(&o, &in, "check");
    ck_assert(gl_out_flush(&o));
    text = tu_slurp(fd, NULL);
    close(fd);
    ck_assert_msg(strstr(text, "live at death") == NULL, "%s", text);
    free(text);
}
END_TEST

/* ---- suppressions, generated suppressions, error gating ---- */

#define SUPP_MALLOC                                                                                \
    "{\n   hide-make-buffer\n   gpuleak:Leak\n   fun:cudaMalloc\n   fun:make_buffer*\n}\n"

START_TEST(test_suppressed_records_hidden)
{
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 100, 1, 1, 1, 0x7f0000000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    struct gl_loss_record *r2 = add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 200, 1, 2, 2,
                                           0x7f0000100000, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_POSSIBLE, STACK_SMALL, 300, 1, 3, 3, 0x7f0000200000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    usage(3, 0, 600, 600);
    suppress(SUPP_MALLOC);
    ck_assert_ptr_eq(r2->suppressed_by, &supps.v[0]);
    /* Record 2 is not shown; the others keep their numbers "of 3". */
    expect_report(
        PREAMBLE P
        "100 bytes in 1 blocks are definitely lost in loss record 1 of 3\n" SMALL_AT DEV_BLOCK(
            "0x7f0000000000", "1") BLANK P
        "300 bytes in 1 blocks are possibly lost in loss record 3 of 3\n" SMALL_AT DEV_BLOCK(
            "0x7f0000200000", "3") BLANK GPU_SUMMARY("600", "3", "3", "0", "600", "600")
            LEAK_SUMMARY_S("100 bytes in 1 blocks", NONE, "300 bytes in 1 blocks", NONE, NONE,
                           "200 bytes in 1 blocks") BLANK ERRORS_S("2", "1"));
    ck_assert_uint_eq(gl_report_text_error_count(&in), 2);
    struct gl_error_counts c;
    gl_report_text_error_counts(&in, &c);
    ck_assert_uint_eq(c.errors, 2);
    ck_assert_uint_eq(c.contexts, 2);
    ck_assert_uint_eq(c.suppressed, 1);
    ck_assert_uint_eq(c.suppressed_contexts, 1);
}
END_TEST

START_TEST(test_all_suppressed)
{
    add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 1000, 2, 1, 2, 0x7f0000000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_POSSIBLE, STACK_MALLOC, 24, 3, 3, 5, 0x7f0000100000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    usage(5, 0, 1024, 1024);
    suppress(SUPP_MALLOC);
    expect_report(PREAMBLE GPU_SUMMARY("1,024", "5", "5", "0", "1,024", "1,024") LEAK_SUMMARY_S(
        NONE, NONE, NONE, NONE, NONE, "1,024 bytes in 5 blocks") BLANK ERRORS_S("0", "2"));
    /* -q: nothing at all. */
    opt.quiet = true;
    expect_report("");
}
END_TEST

START_TEST(test_verbose_used_suppressions)
{
    opt.verbose = 1;
    add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 100, 1, 1, 1, 0x7f0000000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_POSSIBLE, STACK_MALLOC, 200, 1, 2, 2, 0x7f0000100000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_DEFINITE, STACK_ASYNC, 4096, 2, 3, 4, 0x7f0000200000, GL_MEM_ASYNC,
               GL_API_cuMemAllocAsync, 0);
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 50, 1, 5, 5, 0x7f0000300000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    usage(5, 0, 4446, 4446);
    suppress(SUPP_MALLOC                                                        /* lines 1-6 */
             "{\n   never used\n   gpuleak:Leak\n   fun:nothing\n}\n"           /* lines 7-11 */
             "{\n   pool cache\n   gpuleak:Cached\n   fun:cudaMallocAsync\n}\n" /* 12-16 */
             "{\n   bad frees\n   gpuleak:InvalidFree\n   fun:*\n}\n");         /* 17- */
    supps.v[supps.n - 1].count = 7; /* as the leak run counts an error context's occurrences */
    expect_report(
        PREAMBLE P
        "50 bytes in 1 blocks are definitely lost in loss record 4 of 4\n" SMALL_AT DEV_BLOCK(
            "0x7f0000300000", "5") BLANK GPU_SUMMARY("4,446", "5", "5", "0", "4,446", "4,446")
            LEAK_SUMMARY_S("50 bytes in 1 blocks", NONE, NONE, NONE, "4,096 bytes in 2 blocks",
                           "300 bytes in 2 blocks") P
        "Cached blocks are not shown.\n" P
        "To see them, rerun with: --leak-check=full --show-leak-kinds=all\n" BLANK
        "--4242-- used_suppression:      2 hide-make-buffer s.supp:1 suppressed: 300 "
        "bytes in 2 blocks\n"
        "--4242-- used_suppression:      1 pool cache s.supp:12 classified as cached: 4,096 bytes "
        "in 2 blocks\n"
        "--4242-- used_suppression:      7 bad frees s.supp:17\n" BLANK ERRORS_S("1", "2"));
    /* Without -v: no used_suppression lines. */
    opt.verbose = 0;
    char *text = render();
    ck_assert_ptr_null(strstr(text, "used_suppression"));
    ck_assert_ptr_null(strstr(text, "--4242--"));
    free(text);
}
END_TEST

START_TEST(test_verbose_without_used_suppressions)
{
    opt.verbose = 2;
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 50, 1, 1, 1, 0x7f0000300000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    usage(1, 0, 50, 50);
    suppress(SUPP_MALLOC);
    char *text = render();
    ck_assert_ptr_null(strstr(text, "used_suppression"));
    /* No extra separator either. */
    ck_assert_ptr_nonnull(strstr(text, LEAK_SUMMARY("50 bytes in 1 blocks", NONE, NONE, NONE, NONE)
                                           BLANK ERRORS("1")));
    free(text);
}
END_TEST

#define GEN_HEAD(kind)                                                                             \
    "{\n   <insert_a_suppression_name_here>\n   gpuleak:Leak\n   match-leak-kinds: " kind "\n"

START_TEST(test_gen_suppressions_all)
{
    set_option("--gen-suppressions=all");
    add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 1048576, 1, 11, 11, 0x7fa473e00000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_POSSIBLE, STACK_SMALL, 64, 1, 12, 12, 0x7fa474000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    usage(12, 10, 1089600, 1048640);
    /* As Valgrind: each entry, unprefixed, right after its record's blank line. */
    expect_report(
        PREAMBLE P
        "1,048,576 bytes in 1 blocks are definitely lost in loss record 1 of 2\n" MALLOC_AT P
        " Block 0x7fa473e00000 on device 0 (NVIDIA H200): device memory from cudaMalloc, "
        "allocation #11\n" BLANK GEN_HEAD(
            "definite") "   fun:cudaMalloc\n"
                        "   fun:make_buffer(unsigned long)\n"
                        "   obj:*\n"
                        "   fun:main\n"
                        "}\n" P
                        "64 bytes in 1 blocks are possibly lost in loss record 2 of 2\n" SMALL_AT
                            DEV_BLOCK("0x7fa474000000", "12") BLANK GEN_HEAD(
                                "possible") "   fun:cudaMalloc\n"
                                            "}\n" GPU_SUMMARY("1,048,640", "2", "12", "10",
                                                              "1,089,600", "1,048,640")
                                                LEAK_SUMMARY("1,048,576 bytes in 1 blocks", NONE,
                                                             "64 bytes in 1 blocks", NONE, NONE)
                                                    BLANK ERRORS("2"));
    /* The default, no: none. */
    set_option("--gen-suppressions=no");
    char *text = render();
    ck_assert_ptr_null(strstr(text, "insert_a_suppression_name_here"));
    free(text);
}
END_TEST

START_TEST(test_gen_suppressions_round_trip)
{
    /* What the report prints suppresses that record when read back. */
    set_option("--gen-suppressions=all");
    add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 100, 1, 1, 1, 0x7f0000000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_DEFINITE, STACK_DRIVER, 200, 1, 2, 2, 0x7f0000100000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_DEFINITE, STACK_HOST, 300, 1, 3, 3, 0x7f0000200000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    char *text = render();
    /* Keep the unprefixed lines: the generated entries. */
    char entries[8192] = "";
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        if (strncmp(line, "==", 2) != 0)
            snprintf(entries + strlen(entries), sizeof entries - strlen(entries), "%s\n", line);
    free(text);
    char err[512];
    ck_assert_int_eq(
        gl_suppressions_load_text(&supps, entries, strlen(entries), "gen.supp", err, sizeof err),
        0);
    ck_assert_uint_eq(supps.n, 3);
    gl_suppress_records(&lr, &supps, fake_stack_frames, NULL);
    for (size_t i = 0; i < 3; i++)
        ck_assert_ptr_eq(recs[i].suppressed_by, &supps.v[i]);
}
END_TEST

START_TEST(test_gen_suppressions_without_stack)
{
    /* A record without a stack: whatever is printed as its suppression must be
     * an entry gpuleak can read back (an entry needs at least one frame line). */
    set_option("--gen-suppressions=all");
    add_record(GL_LEAK_DEFINITE, STACK_NONE, 512, 1, 1, 1, 0x7f0000000000, GL_MEM_MANAGED,
               GL_API_cuMemAllocManaged, 0);
    char *text = render();
    char entries[8192] = "";
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        if (strncmp(line, "==", 2) != 0)
            snprintf(entries + strlen(entries), sizeof entries - strlen(entries), "%s\n", line);
    free(text);
    char err[512] = "";
    int rc =
        gl_suppressions_load_text(&supps, entries, strlen(entries), "gen.supp", err, sizeof err);
    ck_assert_msg(rc == 0,
                  "the suppression printed for a record without a stack cannot be "
                  "read back: %s\n%s",
                  err, entries);
}
END_TEST

START_TEST(test_errors_for_leak_kinds)
{
    set_option("--show-leak-kinds=all");
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 1, 1, 1, 1, 0x1000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_POSSIBLE, STACK_SMALL, 2, 1, 2, 2, 0x2000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_REACHABLE, STACK_SMALL, 3, 1, 3, 3, 0x3000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_CACHED, STACK_SMALL, 4, 1, 4, 4, 0x4000, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2,
               0);
    add_record(GL_LEAK_INDIRECT, STACK_SMALL, 5, 1, 5, 5, 0x5000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    /* The default: definite,possible. */
    ck_assert_uint_eq(gl_report_text_error_count(&in), 2);
    set_option("--errors-for-leak-kinds=definite");
    ck_assert_uint_eq(gl_report_text_error_count(&in), 1);
    char *text = render();
    ck_assert_ptr_nonnull(strstr(text, ERRORS("1")));
    ck_assert_ptr_nonnull(strstr(text, "in loss record 2 of 5\n")); /* shown, not an error */
    free(text);
    set_option("--errors-for-leak-kinds=all");
    ck_assert_uint_eq(gl_report_text_error_count(&in), 5);
    text = render();
    ck_assert_ptr_nonnull(strstr(text, ERRORS("5")));
    free(text);
    set_option("--errors-for-leak-kinds=reachable,cached");
    ck_assert_uint_eq(gl_report_text_error_count(&in), 2);
    ck_assert(!gl_report_text_is_error(&opt, &recs[0]));
    ck_assert(gl_report_text_is_error(&opt, &recs[2]));
    ck_assert(gl_report_text_is_error(&opt, &recs[3]));
    set_option("--errors-for-leak-kinds=none");
    ck_assert_uint_eq(gl_report_text_error_count(&in), 0);
    text = render();
    ck_assert_ptr_nonnull(strstr(text, ERRORS("0")));
    free(text);
    /* -q shows only errors: which records those are follows the option. */
    opt.quiet = true;
    set_option("--errors-for-leak-kinds=definite");
    text = render();
    ck_assert_ptr_nonnull(strstr(text, "in loss record 1 of 5\n"));
    for (int i = 2; i <= 5; i++) {
        char needle[64];
        snprintf(needle, sizeof needle, "in loss record %d of 5\n", i);
        ck_assert_msg(strstr(text, needle) == NULL, "-q shows record %d", i);
    }
    free(text);
    set_option("--errors-for-leak-kinds=all");
    text = render();
    for (int i = 1; i <= 5; i++) {
        char needle[64];
        snprintf(needle, sizeof needle, "in loss record %d of 5\n", i);
        ck_assert_msg(strstr(text, needle) != NULL, "-q hides record %d", i);
    }
    free(text);
}
END_TEST

START_TEST(test_errors_for_leak_kinds_and_suppressed)
{
    set_option("--errors-for-leak-kinds=definite");
    add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 1, 1, 1, 1, 0x1000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 2, 1, 2, 2, 0x2000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    suppress(SUPP_MALLOC);
    char *text = render();
    ck_assert_ptr_nonnull(strstr(text, ERRORS_S("1", "1")));
    free(text);
}
END_TEST

#define EXIT_LINE P "gpuleak: the first error ends the list (--exit-on-first-error=yes)\n"

/* What the reachability scan did, with -v; and why it could not, always. */
START_TEST(test_reachability_notes)
{
    struct gl_reachability reach = {.available = true,
                                    .root_bytes = 270640,
                                    .object_bytes = 109750,
                                    .objects_reached = 1234,
                                    .threads_stopped = 3,
                                    .threads_skipped = 4,
                                    .searched = 1,
                                    .seconds = 0.0066};
    in.reach = &reach;
    set_option("-v");
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 10, 1, 1, 1, 0x7f0000000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    usage(1, 0, 10, 10);
    char *text = render();
    ck_assert_msg(strstr(text, "--4242-- searching for pointers to 1 not-freed blocks\n"
                               "--4242-- checked 380,390 bytes: 270,640 in roots, 109,750 in "
                               "1,234 reached chunks\n"
                               "--4242-- 3 threads stopped, 4 not (the CUDA driver's, or blocking "
                               "SIGURG); 6.6 ms\n"),
                  "got:\n%s", text);
    free(text);
    /* Blocks a caching allocator's rule held were not searched for: said so;
     * with none left to search for, no figures of a scan that did not run. */
    add_record(GL_LEAK_CACHED, STACK_SMALL, 20, 2, 2, 2, 0x7f0000100000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    reach.held_by_rule = 2;
    text = render();
    ck_assert_msg(strstr(text, "--4242-- searching for pointers to 1 not-freed blocks (2 more "
                               "held by a caching allocator, by its rule: not searched for)\n"
                               "--4242-- checked 380,390 bytes"),
                  "got:\n%s", text);
    free(text);
    reach.searched = 0;
    reach.held_by_rule = 3;
    text = render();
    ck_assert_msg(strstr(text, "--4242-- searching for pointers to 0 not-freed blocks (3 more "
                               "held by a caching allocator, by its rule: not searched for)\n"),
                  "got:\n%s", text);
    ck_assert_ptr_null(strstr(text, "checked 380,390"));
    ck_assert_ptr_null(strstr(text, "threads stopped"));
    free(text);
    /* Nothing searched for or held here (a replay: the process that ran
     * the program scanned): no figures. */
    reach.held_by_rule = 0;
    text = render();
    ck_assert_ptr_null(strstr(text, "searching for pointers"));
    free(text);
    reach.searched = 1;
    /* Not verbose: nothing said while the scan worked. */
    opt.verbose = 0;
    text = render();
    ck_assert_ptr_null(strstr(text, "searching for pointers"));
    free(text);
    reach = (struct gl_reachability){.why_not = "out of memory"};
    text = render();
    ck_assert_ptr_nonnull(strstr(text, P "gpuleak: which blocks the program still points to is "
                                         "not known: out of memory; every outstanding block "
                                         "counts as definitely lost\n"));
    free(text);
    in.reach = NULL;
}
END_TEST

START_TEST(test_exit_on_first_error)
{
    set_option("--show-leak-kinds=all");
    set_option("--error-exitcode=3");
    set_option("--exit-on-first-error=yes");
    add_record(GL_LEAK_REACHABLE, STACK_SMALL, 10, 1, 1, 1, 0x7f0000000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 20, 1, 2, 2, 0x7f0000100000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_POSSIBLE, STACK_SMALL, 30, 1, 3, 3, 0x7f0000200000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    usage(3, 0, 60, 60);
    char *text = render();
    /* The record that is no error, the first error, the line, then the summaries. */
    const char *want = PREAMBLE P
        "10 bytes in 1 blocks are still reachable in loss record 1 of 3\n" SMALL_AT DEV_BLOCK(
            "0x7f0000000000", "1") BLANK P
        "20 bytes in 1 blocks are definitely lost in loss record 2 of 3\n" SMALL_AT DEV_BLOCK(
            "0x7f0000100000", "2") BLANK EXIT_LINE BLANK P "GPU MEMORY SUMMARY:\n";
    ck_assert_msg(strncmp(text, want, strlen(want)) == 0, "got:\n%s", text);
    ck_assert_ptr_null(strstr(text, "in loss record 3 of 3"));
    free(text);
    /* A suppressed error does not end the list. */
    setup();
    set_option("--error-exitcode=3");
    set_option("--exit-on-first-error=yes");
    add_record(GL_LEAK_DEFINITE, STACK_MALLOC, 10, 1, 1, 1, 0x7f0000000000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 20, 1, 2, 2, 0x7f0000100000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    add_record(GL_LEAK_DEFINITE, STACK_SMALL, 30, 1, 3, 3, 0x7f0000200000, GL_MEM_DEVICE,
               GL_API_cuMemAlloc_v2, 0);
    suppress(SUPP_MALLOC);
    text = render();
    ck_assert_ptr_nonnull(strstr(
        text,
        P "20 bytes in 1 blocks are definitely lost in loss record 2 of 3\n" SMALL_AT DEV_BLOCK(
            "0x7f0000100000", "2") BLANK EXIT_LINE BLANK P "GPU MEMORY SUMMARY:\n"));
    ck_assert_ptr_null(strstr(text, "in loss record 1 of 3"));
    ck_assert_ptr_null(strstr(text, "in loss record 3 of 3"));
    free(text);
    /* Without the option: every record. */
    opt.exit_on_first_error = false;
    text = render();
    ck_assert_ptr_nonnull(strstr(text, "in loss record 3 of 3"));
    ck_assert_ptr_null(strstr(text, "--exit-on-first-error"));
    free(text);
}
END_TEST

/* --stats=yes: each column title ends where its numbers end. */
START_TEST(test_usage_stats_columns)
{
    static struct gl_usage u;
    memset(&u, 0, sizeof u);
    u.used[0] = true;
    struct gl_stat_counts *c = &u.grp[0][GL_MEM_DEVICE].split[GL_SPLIT_ALL];
    c->alloc_blocks = 103;
    c->cur_blocks = c->peak_blocks = 103;
    c->alloc_bytes = c->cur_bytes = c->peak_bytes = 3555328;
    u.grp[0][GL_MEM_DEVICE].split[GL_SPLIT_SMALL] = *c;
    in.usage = &u;
    set_option("--stats=yes");
    char *text = render();
    const char *title = strstr(text, "  device 0 (NVIDIA H200), device memory:\n");
    ck_assert_msg(title != NULL, "%s", text);
    const char *hdr = strchr(title, '\n') + 1, *row = strchr(hdr, '\n') + 1;
    ck_assert_msg(strncmp(row, "==4242==     blocks all ", 24) == 0, "%s", row);
    const char *names[] = {"current", "peak", "allocated", "freed"};
    const char *values[] = {"103", "103", "103", "0"};
    const char *h = hdr, *r = row + 20; /* past "==4242==     blocks all" */
    for (int k = 0; k < 4; k++) {
        const char *hn = strstr(h, names[k]), *rv = strstr(r, values[k]);
        ck_assert_ptr_nonnull(hn);
        ck_assert_ptr_nonnull(rv);
        ck_assert_msg((hn - hdr) + strlen(names[k]) == (rv - row) + strlen(values[k]),
                      "column %s: title ends at %d, value at %d", names[k],
                      (int)(hn - hdr + strlen(names[k])), (int)(rv - row + strlen(values[k])));
        h = hn + strlen(names[k]);
        r = rv + strlen(values[k]);
    }
    free(text);
}
END_TEST

static Suite *report_suite(void)
{
    Suite *s = suite_create("report_text");
    TCase *tc = tcase_create("report");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_full_report_one_record);
    tcase_add_test(tc, test_record_of_many_blocks);
    tcase_add_test(tc, test_direct_and_indirect);
    tcase_add_test(tc, test_held_through_lost_host_block);
    tcase_add_test(tc, test_held_through_library_memory);
    tcase_add_test(tc, test_cached_record_names_its_holder);
    tcase_add_test(tc, test_host_async_vmm_thread);
    tcase_add_test(tc, test_block_line_variants);
    tcase_add_test(tc, test_vmm_variants);
    tcase_add_test(tc, test_arrays_and_other_threads);
    tcase_add_test(tc, test_num_callers);
    tcase_add_test(tc, test_num_callers_deep);
    tcase_add_test(tc, test_no_stack);
    tcase_add_test(tc, test_leak_check_summary);
    tcase_add_test(tc, test_leak_check_no);
    tcase_add_test(tc, test_quiet);
    tcase_add_test(tc, test_quiet_without_leaks_is_silent);
    tcase_add_test(tc, test_hidden_kinds);
    tcase_add_test(tc, test_show_leak_kinds_selects_records);
    tcase_add_test(tc, test_no_blocks);
    tcase_add_test(tc, test_imported_memory);
    tcase_add_test(tc, test_error_count);
    tcase_add_test(tc, test_preamble_quiet);
    tcase_add_test(tc, test_summary_colons_aligned);
    tcase_add_test(tc, test_live_at_death_summary_only_when_nonzero);
    tcase_add_test(tc, test_live_at_death_record);
    tcase_add_test(tc, test_live_at_death_hidden);
    tcase_add_test(tc, test_live_at_death_delta_to_zero);
    tcase_add_test(tc, test_suppressed_records_hidden);
    tcase_add_test(tc, test_all_suppressed);
    tcase_add_test(tc, test_verbose_used_suppressions);
    tcase_add_test(tc, test_verbose_without_used_suppressions);
    tcase_add_test(tc, test_gen_suppressions_all);
    tcase_add_test(tc, test_gen_suppressions_round_trip);
    tcase_add_test(tc, test_gen_suppressions_without_stack);
    tcase_add_test(tc, test_errors_for_leak_kinds);
    tcase_add_test(tc, test_errors_for_leak_kinds_and_suppressed);
    tcase_add_test(tc, test_exit_on_first_error);
    tcase_add_test(tc, test_reachability_notes);
    tcase_add_test(tc, test_usage_stats_columns);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(report_suite)
