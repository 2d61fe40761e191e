/* SPDX-License-Identifier: MIT */
/* What each API error says (report/report_errors.c): the first line and the
 * auxiliary lines for every kind and detail, from fixed errors and a fake
 * stack service, so the texts the GPU suite reads are pinned without a GPU. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/framework.h"
#include "common/error_kind.h"
#include "report/report_errors.h"
#include "event/api.h"
#include "track/errors.h"
#include "event/event.h"

#define BLOCK 0x7F0000000000ULL
#define MiB (1024ULL * 1024ULL)

enum { NO_STACK = 0, STACK_CUDA_FREE = 1, STACK_PROGRAM = 2 };

/* Stack 1 starts in cudaFree (the call the program made); others in main. */
static unsigned fake_frames(uint32_t stack, struct gl_frame *out, unsigned max, void *arg)
{
    (void)arg;
    if (!max || !stack)
        return 0;
    memset(out, 0, sizeof *out);
    out->ip = 0x1000 + stack;
    out->function = stack == STACK_CUDA_FREE ? "cudaFree" : "main";
    return 1;
}

static const struct gl_error_services svc = {
    .num_callers = 12,
    .stack_frames = fake_frames,
};

static struct gl_api_error error(unsigned kind, unsigned detail, unsigned api, uint32_t stack,
                                 uint64_t addr, uint64_t size)
{
    struct gl_api_error e;
    memset(&e, 0, sizeof e);
    e.kind = (uint8_t)kind;
    e.detail = (uint8_t)detail;
    e.api = (uint16_t)api;
    e.stack = stack;
    e.addr = addr;
    e.size = size;
    e.device = 0;
    return e;
}

static void with_block(struct gl_api_error *e, uint64_t key, uint64_t size, unsigned kind,
                       unsigned api, uint32_t alloc_stack)
{
    e->flags |= GL_ERRF_BLOCK;
    e->block.block.key = key;
    e->block.block.size = size;
    e->block.block.kind = (uint8_t)kind;
    e->block.block.api = (uint16_t)api;
    e->block.block.stack = alloc_stack;
    e->block.block.device = 0;
}

static void freed_by(struct gl_api_error *e, unsigned api, uint32_t free_stack)
{
    e->flags |= GL_ERRF_FREED;
    e->block.free_api = (uint16_t)api;
    e->block.free_stack = free_stack;
}

static struct gl_error_text describe(const struct gl_api_error *e)
{
    struct gl_error_text t;
    gl_report_errors_describe(e, &svc, &t);
    return t;
}

START_TEST(test_invalid_free_never_allocated)
{
    struct gl_api_error e = error(GL_ERR_INVALID_FREE, GL_ERD_NEVER_ALLOCATED, GL_API_cuMemFree_v2,
                                  STACK_CUDA_FREE, 0x12345000, 0);
    struct gl_error_text t = describe(&e);
    ck_assert_str_eq(t.what, "Invalid free: cudaFree(0x12345000): an address gpuleak never saw "
                             "allocated");
    ck_assert_str_eq(t.aux[0], "");
    ck_assert_str_eq(t.aux[1], "");
}
END_TEST

START_TEST(test_invalid_free_interior)
{
    /* No stack: the driver's entry point names the call. */
    struct gl_api_error e =
        error(GL_ERR_INVALID_FREE, GL_ERD_INTERIOR, GL_API_cuMemFree_v2, NO_STACK, BLOCK + 256, 0);
    with_block(&e, BLOCK, 4096, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, STACK_PROGRAM);
    struct gl_error_text t = describe(&e);
    ck_assert_str_eq(t.what, "Invalid free: cuMemFree_v2(0x7F0000000100): the address is inside a "
                             "block, not at its start");
    ck_assert_str_eq(t.aux[0], "Address 0x7F0000000100 is 256 bytes inside a block of 4,096 bytes "
                               "alloc'd");
    ck_assert_uint_eq(t.aux_stack[0], STACK_PROGRAM);
    ck_assert(!t.aux_stack_missing[0]);
    ck_assert_str_eq(t.aux[1], "");
}
END_TEST

START_TEST(test_invalid_free_freed_interior)
{
    struct gl_api_error e = error(GL_ERR_INVALID_FREE, GL_ERD_FREED_INTERIOR, GL_API_cuMemFree_v2,
                                  STACK_CUDA_FREE, BLOCK + 8, 0);
    with_block(&e, BLOCK, 64, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, STACK_PROGRAM);
    freed_by(&e, GL_API_cuMemFree_v2, NO_STACK); /* free stacks not kept */
    struct gl_error_text t = describe(&e);
    ck_assert_str_eq(t.what,
                     "Invalid free: cudaFree(0x7F0000000008): the address is inside a freed block");
    ck_assert_str_eq(t.aux[0], "Address 0x7F0000000008 is 8 bytes inside a block of 64 bytes "
                               "free'd");
    ck_assert(t.aux_stack_missing[0]);
    ck_assert_str_eq(t.aux[1], "Block was alloc'd at");
    ck_assert_uint_eq(t.aux_stack[1], STACK_PROGRAM);
    ck_assert(!t.aux_stack_missing[1]);
}
END_TEST

START_TEST(test_invalid_free_vmm_mapped)
{
    struct gl_api_error e = error(GL_ERR_INVALID_FREE, GL_ERD_VMM_MAPPED, GL_API_cuMemFree_v2,
                                  STACK_CUDA_FREE, BLOCK, 0);
    with_block(&e, BLOCK, 2 * MiB, GL_MEM_VMM, GL_API_cuMemCreate, STACK_PROGRAM);
    struct gl_error_text t = describe(&e);
    ck_assert_str_eq(t.what, "Invalid free: cudaFree(0x7F0000000000): the address is mapped with "
                             "cuMemMap; unmap it with cuMemUnmap and release its handle with "
                             "cuMemRelease");
    ck_assert_str_eq(t.aux[0], "Address 0x7F0000000000 is 0 bytes inside a mapping of 2,097,152 "
                               "bytes of a physical allocation made");
    ck_assert_uint_eq(t.aux_stack[0], STACK_PROGRAM);
}
END_TEST

START_TEST(test_double_free)
{
    struct gl_api_error e =
        error(GL_ERR_DOUBLE_FREE, GL_ERD_NONE, GL_API_cuMemFree_v2, STACK_CUDA_FREE, BLOCK, 0);
    with_block(&e, BLOCK, 4096, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, STACK_PROGRAM);
    freed_by(&e, GL_API_cuMemFree_v2, STACK_CUDA_FREE);
    struct gl_error_text t = describe(&e);
    ck_assert_str_eq(t.what, "Double free: cudaFree(0x7F0000000000): the block was already freed");
    ck_assert_str_eq(t.aux[0], "Address 0x7F0000000000 is 0 bytes inside a block of 4,096 bytes "
                               "free'd");
    ck_assert_uint_eq(t.aux_stack[0], STACK_CUDA_FREE);
    ck_assert_str_eq(t.aux[1], "Block was alloc'd at");
}
END_TEST

START_TEST(test_double_release_mapped_handle)
{
    uint64_t h = gl_key_make(GL_NS_VMM_HANDLE, 0x77);
    struct gl_api_error e =
        error(GL_ERR_DOUBLE_FREE, GL_ERD_HANDLE_RELEASED, GL_API_cuMemRelease, NO_STACK, 0x77, 0);
    with_block(&e, h, 2 * MiB, GL_MEM_VMM, GL_API_cuMemCreate, STACK_PROGRAM);
    e.block.block.aux = 2; /* mappings */
    struct gl_error_text t = describe(&e);
    ck_assert_str_eq(t.what, "Double free: cuMemRelease(0x77): the handle was already released "
                             "(its memory stays until its mappings are unmapped)");
    ck_assert_str_eq(t.aux[0],
                     "Handle 0x77 of 2,097,152 bytes, mapped at 2 addresses, was created at");
    ck_assert_uint_eq(t.aux_stack[0], STACK_PROGRAM);
    ck_assert_str_eq(t.aux[1], "");
    e.block.block.aux = 1;
    t = describe(&e);
    ck_assert_str_eq(t.aux[0],
                     "Handle 0x77 of 2,097,152 bytes, mapped at 1 address, was created at");
}
END_TEST

START_TEST(test_mismatched_wrong_call)
{
    struct gl_api_error e =
        error(GL_ERR_MISMATCHED_FREE, GL_ERD_WRONG_CALL, GL_API_cuMemFreeHost, NO_STACK, BLOCK, 0);
    with_block(&e, BLOCK, 4096, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, NO_STACK);
    struct gl_error_text t = describe(&e);
    ck_assert_str_eq(t.what, "Mismatched free: cuMemFreeHost(0x7F0000000000) of device memory from "
                             "cuMemAlloc_v2; release it with cudaFree (cuMemFree)");
    ck_assert_str_eq(t.aux[0], "Address 0x7F0000000000 is 0 bytes inside a block of 4,096 bytes "
                               "alloc'd");
    /* No allocation stack: not recorded, which no option would have changed. */
    ck_assert(!t.aux_stack_missing[0]);
    with_block(&e, BLOCK, 4096, GL_MEM_HOST_PINNED, GL_API_cuMemHostAlloc, NO_STACK);
    e.api = GL_API_cuMemFree_v2;
    t = describe(&e);
    ck_assert_str_eq(t.what,
                     "Mismatched free: cuMemFree_v2(0x7F0000000000) of pinned host memory from "
                     "cuMemHostAlloc; release it with cudaFreeHost (cuMemFreeHost)");
}
END_TEST

START_TEST(test_ranges)
{
    struct gl_api_error e = error(GL_ERR_INVALID_RANGE, GL_ERD_NONE, GL_API_cuMemcpyHtoD_v2,
                                  NO_STACK, BLOCK + 3072, 2048);
    e.flags |= GL_ERRF_WRITE;
    with_block(&e, BLOCK, 4096, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, STACK_PROGRAM);
    struct gl_error_text t = describe(&e);
    ck_assert_str_eq(t.what, "Invalid write of 2,048 bytes by cuMemcpyHtoD_v2 at 0x7F0000000C00: "
                             "1,024 bytes past the end of the block");
    ck_assert_str_eq(t.aux[0], "Address 0x7F0000000C00 is 3,072 bytes inside a block of 4,096 "
                               "bytes alloc'd");

    e = error(GL_ERR_FREED_RANGE, GL_ERD_NONE, GL_API_cuMemcpyDtoH_v2, NO_STACK, BLOCK + 16, 8);
    with_block(&e, BLOCK, 4096, GL_MEM_DEVICE, GL_API_cuMemAlloc_v2, STACK_PROGRAM);
    freed_by(&e, GL_API_cuMemFree_v2, STACK_CUDA_FREE);
    t = describe(&e);
    ck_assert_str_eq(t.what,
                     "Invalid read of 8 bytes by cuMemcpyDtoH_v2 at 0x7F0000000010: the block was "
                     "freed");
    ck_assert_str_eq(t.aux[0], "Address 0x7F0000000010 is 16 bytes inside a block of 4,096 bytes "
                               "free'd");
    ck_assert_str_eq(t.aux[1], "Block was alloc'd at");
}
END_TEST

START_TEST(test_out_of_memory)
{
    struct gl_api_error e =
        error(GL_ERR_OUT_OF_MEMORY, GL_ERD_NONE, GL_API_cuMemAlloc_v2, NO_STACK, 0, 1ULL << 50);
    e.mem_kind = GL_MEM_DEVICE;
    struct gl_error_text t = describe(&e);
    ck_assert_str_eq(t.what, "Out of memory: cuMemAlloc_v2 of 1,125,899,906,842,624 bytes (device "
                             "memory) on device 0 failed");
    e.device = -1;
    e.mem_kind = GL_MEM_HOST_PINNED;
    e.api = GL_API_cuMemHostAlloc;
    e.size = 4096;
    t = describe(&e);
    ck_assert_str_eq(t.what, "Out of memory: cuMemHostAlloc of 4,096 bytes (pinned host memory) in "
                             "host memory failed");
}
END_TEST

/* The details of an out-of-memory error, from the holders it is given:
 * NVML's figures, live bytes per kind, the top sites (at most top_sites). */
START_TEST(test_out_of_memory_printed)
{
    struct gl_api_error e =
        error(GL_ERR_OUT_OF_MEMORY, GL_ERD_NONE, GL_API_cuMemAlloc_v2, STACK_CUDA_FREE, 0, 8 * MiB);
    e.mem_kind = GL_MEM_DEVICE;
    e.flags |= GL_ERRF_DEVMEM;
    e.device_free = MiB;
    e.device_total = 80 * 1024 * MiB;
    struct gl_site_stats sites[] = {
        {.stack = STACK_PROGRAM, .live_bytes = 3 * MiB, .live_blocks = 3, .peak_bytes = 5 * MiB},
        {.stack = NO_STACK, .live_bytes = MiB, .live_blocks = 1},
        {.stack = STACK_PROGRAM, .live_bytes = 1, .live_blocks = 1}, /* beyond top_sites */
    };
    struct gl_counters_holders h = {.counted = true, .sites = sites, .nsites = 3, .peaks = true};
    h.live[GL_MEM_DEVICE].bytes = 3 * MiB;
    h.live[GL_MEM_DEVICE].blocks = 3;
    h.live[GL_MEM_MANAGED].bytes = MiB + 1;
    h.live[GL_MEM_MANAGED].blocks = 2;
    struct gl_error_services two = svc;
    two.top_sites = 2;
    char buf[4096];
    struct gl_out o;
    gl_out_init_mem(&o, buf, sizeof buf);
    gl_report_errors_api_error(&o, &e, &two, &h);
    gl_out_flush(&o);
    ck_assert_str_eq(buf, "Out of memory: cudaFree of 8,388,608 bytes (device memory) on device 0 "
                          "failed\n"
                          "   at 0x1001: cudaFree\n"
                          " Device 0: 1,048,576 bytes free of 85,899,345,920 (NVML)\n"
                          " Live on device 0, as gpuleak tracked it: 4,194,305 bytes\n"
                          "   3,145,728 bytes in 3 blocks of device memory\n"
                          "   1,048,577 bytes in 2 blocks of managed memory\n"
                          " Top allocation sites by live bytes:\n"
                          "  3,145,728 bytes in 3 blocks (75.0%), peak 5,242,880 bytes, "
                          "allocated at\n"
                          "   at 0x1002: main\n"
                          "  1,048,576 bytes in 1 blocks (25.0%), allocated at\n"
                          "   (no stack recorded)\n"
                          "\n");

    /* Nothing given: NVML's line alone. */
    gl_out_init_mem(&o, buf, sizeof buf);
    e.flags &= ~GL_ERRF_DEVMEM;
    gl_report_errors_api_error(&o, &e, &two, NULL);
    gl_out_flush(&o);
    ck_assert_str_eq(buf, "Out of memory: cudaFree of 8,388,608 bytes (device memory) on device 0 "
                          "failed\n"
                          "   at 0x1001: cudaFree\n"
                          " Device 0: free and total memory unknown (NVML could not tell)\n"
                          "\n");
}
END_TEST

static struct gl_api_error growth(uint64_t bytes, uint64_t blocks, uint64_t from, uint32_t k,
                                  uint32_t ordinal, const char *name, enum gl_framework fw)
{
    struct gl_api_error e = error(GL_ERR_GROWTH, GL_ERD_NONE, 0, STACK_PROGRAM, 0, bytes);
    e.device = -1;
    e.growth.blocks = blocks;
    e.growth.from_bytes = from;
    e.growth.checkpoints = k;
    e.growth.ordinal = ordinal;
    e.growth.framework = (uint8_t)fw;
    snprintf(e.growth.checkpoint, sizeof e.growth.checkpoint, "%s", name);
    return e;
}

START_TEST(test_growth_blocks)
{
    /* Growth from nothing, unevenly: the mean per checkpoint, "about". */
    struct gl_api_error e = growth(1 * MiB, 2, 0, 5, 5, "step", GL_FW_NONE);
    struct gl_error_text t = describe(&e);
    ck_assert_str_eq(t.what, "Growth: about +209,715 bytes per checkpoint, +1,048,576 bytes in 2 "
                             "blocks over the last 5 checkpoints; 1,048,576 bytes in 2 blocks "
                             "allocated here (from 0 bytes, checkpoint \"step\" #5)");
    /* The stack is the site's own: no auxiliary lines. */
    ck_assert_str_eq(t.aux[0], "");
    ck_assert_str_eq(t.aux[1], "");
    e = growth(3 * MiB + 7, 1234, 65536, 3, 1001, "epoch 2", GL_FW_NONE);
    t = describe(&e);
    ck_assert_str_eq(t.what, "Growth: +1,026,733 bytes per checkpoint, +3,080,199 bytes in "
                             "1,234 blocks over the last 3 checkpoints; 3,145,735 bytes in 1,234 "
                             "blocks allocated here (from 65,536 bytes, checkpoint \"epoch 2\" "
                             "#1001)");
    /* Issue 25's loop: one 256,000-byte tensor kept per step among 2 held
     * from before: what grows comes first, exactly. */
    e = growth(7 * 256000 + 33554432, 9, 2 * 256000 + 33554432, 5, 12, "step", GL_FW_PYTORCH);
    e.growth.from_blocks = 4;
    t = describe(&e);
    ck_assert_str_eq(t.what, "Growth: +256,000 bytes in 1 tensor per checkpoint, +1,280,000 bytes "
                             "in 5 tensors over the last 5 checkpoints; 35,346,432 bytes in 9 "
                             "tensors allocated here (PyTorch's record) (from 34,066,432 bytes, "
                             "checkpoint \"step\" #12)");
}
END_TEST

START_TEST(test_growth_framework_records)
{
    struct gl_api_error e = growth(40 * MiB, 10, 8 * MiB, 5, 12, "step", GL_FW_PYTORCH);
    struct gl_error_text t = describe(&e);
    ck_assert_str_eq(t.what, "Growth: about +6,710,886 bytes in 2 tensors per checkpoint, "
                             "+33,554,432 bytes in 10 tensors over the last 5 checkpoints; "
                             "41,943,040 bytes in 10 tensors allocated here (PyTorch's record) "
                             "(from 8,388,608 bytes, checkpoint \"step\" #12)");
    e = growth(4096, 3, 1024, 2, 7, "iter", GL_FW_CUPY);
    t = describe(&e);
    ck_assert_str_eq(t.what,
                     "Growth: +1,536 bytes per checkpoint, +3,072 bytes in 3 arrays over "
                     "the last 2 checkpoints; 4,096 bytes in 3 arrays allocated here (CuPy's "
                     "record) (from 1,024 bytes, checkpoint \"iter\" #7)");
    ck_assert_str_eq(t.aux[0], "");
}
END_TEST

/* A framework's site: Python frames only. */
static unsigned python_frames(uint32_t stack, struct gl_frame *out, unsigned max, void *arg)
{
    (void)arg;
    static const struct gl_frame f[] = {
        {.ip = 0x7f00001000,
         .function = "train_step",
         .file = "/home/u/train.py",
         .line = 42,
         .python = true},
        {.ip = 0x7f00002000,
         .function = "<module>",
         .file = "/home/u/train.py",
         .line = 60,
         .python = true},
    };
    unsigned n = stack ? 2 : 0;
    if (n > max)
        n = max;
    memcpy(out, f, n * sizeof *f);
    return n;
}

START_TEST(test_growth_printed)
{
    const struct gl_error_services py = {.num_callers = 12, .stack_frames = python_frames};
    struct gl_api_error e = growth(2048, 2, 0, 3, 3, "step", GL_FW_PYTORCH);
    char buf[2048];
    struct gl_out o;
    gl_out_init_mem(&o, buf, sizeof buf);
    gl_report_errors_api_error(&o, &e, &py, NULL);
    gl_out_flush(&o);
    ck_assert_str_eq(buf, "Growth: about +682 bytes per checkpoint, +2,048 bytes in 2 tensors over "
                          "the last 3 checkpoints; 2,048 bytes in 2 tensors allocated here "
                          "(PyTorch's record) (from 0 bytes, checkpoint \"step\" #3)\n"
                          "   at 0x7F00001000: train_step (train.py:42)\n"
                          "   by 0x7F00002000: <module> (train.py:60)\n"
                          "\n");
}
END_TEST

START_TEST(test_growth_kind_name)
{
    /* The suppression kind gpuleak:Growth and the XML <kind>. */
    ck_assert_str_eq(gl_error_kind_name(GL_ERR_GROWTH), "Growth");
    ck_assert_int_eq(gl_error_kind_parse("Growth"), GL_ERR_GROWTH);
    ck_assert_int_eq(gl_error_kind_parse("growth"), GL_ERR_NONE);
    for (unsigned k = GL_ERR_NONE + 1; k < GL_ERR_NKINDS; k++)
        ck_assert_int_eq(gl_error_kind_parse(gl_error_kind_name(k)), k);
    ck_assert_ptr_null(gl_error_kind_name(GL_ERR_NKINDS));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("report_errors");
    TCase *tc = tcase_create("describe");
    tcase_add_test(tc, test_invalid_free_never_allocated);
    tcase_add_test(tc, test_invalid_free_interior);
    tcase_add_test(tc, test_invalid_free_freed_interior);
    tcase_add_test(tc, test_invalid_free_vmm_mapped);
    tcase_add_test(tc, test_double_free);
    tcase_add_test(tc, test_double_release_mapped_handle);
    tcase_add_test(tc, test_mismatched_wrong_call);
    tcase_add_test(tc, test_ranges);
    tcase_add_test(tc, test_out_of_memory);
    tcase_add_test(tc, test_out_of_memory_printed);
    tcase_add_test(tc, test_growth_blocks);
    tcase_add_test(tc, test_growth_framework_records);
    tcase_add_test(tc, test_growth_printed);
    tcase_add_test(tc, test_growth_kind_name);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
