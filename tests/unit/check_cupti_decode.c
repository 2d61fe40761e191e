/* lib/track/cupti_decode.h: every driver entry point of driver_api.def, decoded
 * from a hand-built CUPTI parameter struct (generated_cuda_meta.h). */
#include <check.h>
#include <cupti.h>
#include <stdint.h>
#include <string.h>

#include "runtime.h"
#include "testutil.h"
#include "track/api.h"
#include "track/callback.h"
#include "track/cupti_decode.h"
#include "track/tool_alloc.h"
#include "track/tracker.h"

/* The legacy descriptors' real layout (cuda.h under __CUDA_API_VERSION_INTERNAL);
 * cupti.h only declares placeholders for them. */
struct legacy_array_desc {
    unsigned int Width, Height;
    CUarray_format Format;
    unsigned int NumChannels;
};
struct legacy_array3d_desc {
    unsigned int Width, Height, Depth;
    CUarray_format Format;
    unsigned int NumChannels, Flags;
};

#define FROM_CTX GL_DEVICE_FROM_CONTEXT
#define VMM(h) gl_key_make(GL_NS_VMM_HANDLE, (h))
#define ARR(h) gl_key_make(GL_NS_ARRAY, (h))
#define MIP(h) gl_key_make(GL_NS_MIPMAP, (h))

struct want {
    enum gl_site site;
    uint8_t type, kind;
    uint64_t key, size, aux;
    int16_t device;
    uint16_t flags;
};

static void drive_handler(uint32_t cbid, const void *params, struct want w, const char *what,
                          int line);

/* Decode at the expected site: exactly these fields, the right API id, and nothing
 * at the other site. */
static void expect_at(uint32_t cbid, unsigned api, const void *params, struct want w,
                      const char *what, int line)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ck_assert_msg(gl_decode(cbid, w.site, params, &ev), "%s (line %d): nothing decoded", what,
                  line);
    ck_assert_msg(ev.api == api, "%s: api %u, want %u", what, ev.api, api);
    ck_assert_msg(ev.type == w.type, "%s (line %d): type %u, want %u", what, line, ev.type, w.type);
    ck_assert_msg(ev.kind == w.kind, "%s (line %d): kind %u, want %u", what, line, ev.kind, w.kind);
    ck_assert_msg(ev.key == w.key, "%s (line %d): key 0x%llx, want 0x%llx", what, line,
                  (unsigned long long)ev.key, (unsigned long long)w.key);
    ck_assert_msg(ev.size == w.size, "%s (line %d): size %llu, want %llu", what, line,
                  (unsigned long long)ev.size, (unsigned long long)w.size);
    ck_assert_msg(ev.aux == w.aux, "%s (line %d): aux 0x%llx, want 0x%llx", what, line,
                  (unsigned long long)ev.aux, (unsigned long long)w.aux);
    ck_assert_msg(ev.device == w.device, "%s (line %d): device %d, want %d", what, line, ev.device,
                  w.device);
    ck_assert_msg(ev.flags == w.flags, "%s (line %d): flags 0x%x, want 0x%x", what, line, ev.flags,
                  w.flags);
    ck_assert_msg(ev.seq == 0 && ev.stack == 0 && ev.tid == 0 && ev.ctx == 0,
                  "%s: decoding filled fields that are not its own", what);

    memset(&ev, 0, sizeof ev);
    enum gl_site other = w.site == GL_SITE_ENTER ? GL_SITE_EXIT : GL_SITE_ENTER;
    ck_assert_msg(!gl_decode(cbid, other, params, &ev), "%s (line %d): decoded at the other site",
                  what, line);
    drive_handler(cbid, params, w, what, line);
}

/* ---- the same call through the CUPTI callback handler ----
 *
 * gl_cupti_callback is called at entry and at exit with hand-built callback data,
 * as CUPTI calls it, and the table must change as the event says. */

#define CTX ((CUcontext)0xc0)

static void call_handler(uint32_t cbid, const void *params, CUresult rc)
{
    uint64_t corr = 0xdeadbeef; /* CUPTI does not clear it: the entry must set it */
    CUpti_CallbackData cb = {.functionParams = params,
                             .functionReturnValue = &rc,
                             .context = CTX,
                             .correlationData = &corr};
    cb.callbackSite = CUPTI_API_ENTER;
    gl_cupti_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &cb);
    cb.callbackSite = CUPTI_API_EXIT;
    gl_cupti_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &cb);
}

static bool live(uint64_t key, struct gl_block_info *out)
{
    struct gl_block_info *blocks;
    size_t n, bytes;
    ck_assert_int_eq(gl_tracker_snapshot(&blocks, &n, &bytes), 0);
    bool found = false;
    for (size_t i = 0; i < n; i++)
        if (blocks[i].key == key) {
            if (out)
                *out = blocks[i];
            found = true;
        }
    gl_tool_unmap(blocks, bytes);
    return found;
}

static void plant(uint64_t key, enum gl_mem_kind kind)
{
    struct gl_event ev = {.type = GL_EV_ALLOC,
                          .kind = (uint8_t)kind,
                          .key = key,
                          .size = 4096,
                          .device = 0,
                          .ctx = (uintptr_t)CTX};
    gl_tracker_alloc(&ev);
}

static void drive_handler(uint32_t cbid, const void *params, struct want w, const char *what,
                          int line)
{
    gl_tracker_reset();
    struct gl_block_info b;
    uint64_t mapped;
    switch (w.type) {
    case GL_EV_ALLOC:
        call_handler(cbid, params, CUDA_ERROR_OUT_OF_MEMORY);
        ck_assert_msg(!live(w.key, NULL), "%s (line %d): a failed call recorded a block", what,
                      line);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(live(w.key, &b), "%s (line %d): no block after the callbacks", what, line);
        ck_assert_msg(b.size == w.size && b.kind == w.kind && b.ctx == (uintptr_t)CTX &&
                          b.api == gl_decode_api_of_cbid(cbid),
                      "%s (line %d): block size %llu kind %u api %u", what, line,
                      (unsigned long long)b.size, b.kind, b.api);
        break;
    case GL_EV_FREE:
        plant(w.key, GL_MEM_DEVICE);
        call_handler(cbid, params, CUDA_ERROR_INVALID_VALUE);
        ck_assert_msg(live(w.key, NULL), "%s (line %d): a failed free lost the block", what, line);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(!live(w.key, NULL), "%s (line %d): block survived its free", what, line);
        break;
    case GL_EV_VMM_RELEASE:
        plant(w.key, GL_MEM_VMM);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(!live(w.key, NULL), "%s (line %d): handle survived its release", what, line);
        break;
    case GL_EV_VMM_RETAIN:
        plant(w.key, GL_MEM_VMM);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(live(w.key, &b) && b.refs == 2, "%s (line %d): refs %u after retain", what,
                      line, b.refs);
        break;
    case GL_EV_VMM_MAP:
        plant(w.aux, GL_MEM_VMM);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(gl_tracker_vmm_mappings(w.aux, NULL, 0, &mapped) == 1 && mapped == w.size,
                      "%s (line %d): mapping not recorded", what, line);
        break;
    case GL_EV_VMM_UNMAP: {
        uint64_t h = VMM(0x77);
        plant(h, GL_MEM_VMM);
        struct gl_event m = {.type = GL_EV_VMM_MAP, .key = w.key, .size = w.size, .aux = h};
        gl_tracker_vmm_map(&m);
        call_handler(cbid, params, CUDA_SUCCESS);
        ck_assert_msg(gl_tracker_vmm_mappings(h, NULL, 0, NULL) == 0,
                      "%s (line %d): mapping survived the unmap", what, line);
        break;
    }
    default:
        ck_abort_msg("%s: no handler check for event type %u", what, w.type);
    }
}

static void expect_nothing_at(uint32_t cbid, const void *params, const char *what, int line)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    ck_assert_msg(!gl_decode(cbid, GL_SITE_ENTER, params, &ev), "%s (line %d): decoded at entry",
                  what, line);
    ck_assert_msg(!gl_decode(cbid, GL_SITE_EXIT, params, &ev), "%s (line %d): decoded at exit",
                  what, line);
}

#define EXPECT(name, params, ...)                                                                  \
    expect_at(CUPTI_DRIVER_TRACE_CBID_##name, GL_API_##name, (params), (struct want){__VA_ARGS__}, \
              #name, __LINE__)
#define EXPECT_NOTHING(name, params)                                                               \
    expect_nothing_at(CUPTI_DRIVER_TRACE_CBID_##name, (params), #name, __LINE__)

#define ALLOC_AT_EXIT .site = GL_SITE_EXIT, .type = GL_EV_ALLOC
#define FREE_AT_ENTER .site = GL_SITE_ENTER, .type = GL_EV_FREE

/* ---- one checker per entry point of driver_api.def ---- */

static void chk_cuMemAlloc(void)
{
    CUdeviceptr_v1 d = 0x12345600u;
    cuMemAlloc_params p = {&d, 4096};
    EXPECT(cuMemAlloc, &p, ALLOC_AT_EXIT, .kind = GL_MEM_DEVICE, .key = 0x12345600u, .size = 4096,
           .device = FROM_CTX);
    d = 0;
    EXPECT_NOTHING(cuMemAlloc, &p); /* no address came back */
    p.dptr = NULL;
    EXPECT_NOTHING(cuMemAlloc, &p);
}

static void chk_cuMemAlloc_v2(void)
{
    CUdeviceptr d = 0x7f0000200000ULL;
    cuMemAlloc_v2_params p = {&d, (size_t)1 << 20};
    EXPECT(cuMemAlloc_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_DEVICE, .key = 0x7f0000200000ULL,
           .size = 1 << 20, .device = FROM_CTX);
    d = 0;
    EXPECT_NOTHING(cuMemAlloc_v2, &p);
    p.dptr = NULL;
    EXPECT_NOTHING(cuMemAlloc_v2, &p);
}

static void chk_cuMemAllocPitch(void)
{
    CUdeviceptr_v1 d = 0x20000000u;
    unsigned int pitch = 512;
    cuMemAllocPitch_params p = {&d, &pitch, 500, 100, 4};
    EXPECT(cuMemAllocPitch, &p, ALLOC_AT_EXIT, .kind = GL_MEM_PITCH, .key = 0x20000000u,
           .size = 512 * 100, .device = FROM_CTX);
    p.pPitch = NULL;
    EXPECT_NOTHING(cuMemAllocPitch, &p);
}

static void chk_cuMemAllocPitch_v2(void)
{
    CUdeviceptr d = 0x7f0000400000ULL;
    size_t pitch = 1024;
    cuMemAllocPitch_v2_params p = {&d, &pitch, 1000, 300, 8};
    EXPECT(cuMemAllocPitch_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_PITCH, .key = 0x7f0000400000ULL,
           .size = 1024 * 300, .device = FROM_CTX);
    p.dptr = NULL;
    EXPECT_NOTHING(cuMemAllocPitch_v2, &p);
}

static void chk_cuMemAllocManaged(void)
{
    CUdeviceptr d = 0x7f0000600000ULL;
    cuMemAllocManaged_params p = {&d, 12345, CU_MEM_ATTACH_GLOBAL};
    EXPECT(cuMemAllocManaged, &p, ALLOC_AT_EXIT, .kind = GL_MEM_MANAGED, .key = 0x7f0000600000ULL,
           .size = 12345, .device = FROM_CTX);
    d = 0;
    EXPECT_NOTHING(cuMemAllocManaged, &p);
}

static void chk_cuMemAllocHost(void)
{
    void *h = (void *)0x7fff00001000ULL;
    cuMemAllocHost_params p = {&h, 777};
    EXPECT(cuMemAllocHost, &p, ALLOC_AT_EXIT, .kind = GL_MEM_HOST_PINNED, .key = 0x7fff00001000ULL,
           .size = 777, .device = -1);
    h = NULL;
    EXPECT_NOTHING(cuMemAllocHost, &p);
}

static void chk_cuMemAllocHost_v2(void)
{
    void *h = (void *)0x7fff00002000ULL;
    cuMemAllocHost_v2_params p = {&h, (size_t)5 << 30};
    EXPECT(cuMemAllocHost_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_HOST_PINNED,
           .key = 0x7fff00002000ULL, .size = (uint64_t)5 << 30, .device = -1);
    p.pp = NULL;
    EXPECT_NOTHING(cuMemAllocHost_v2, &p);
}

static void chk_cuMemHostAlloc(void)
{
    void *h = (void *)0x7fff00003000ULL;
    cuMemHostAlloc_params p = {&h, 8192, CU_MEMHOSTALLOC_PORTABLE};
    EXPECT(cuMemHostAlloc, &p, ALLOC_AT_EXIT, .kind = GL_MEM_HOST_PINNED, .key = 0x7fff00003000ULL,
           .size = 8192, .device = -1);
    h = NULL;
    EXPECT_NOTHING(cuMemHostAlloc, &p);
}

/* cuMemHostAlloc_v2 has no struct of its own: it shares cuMemHostAlloc's. */
static void chk_cuMemHostAlloc_v2(void)
{
    void *h = (void *)0x7fff00004000ULL;
    cuMemHostAlloc_params p = {&h, 16384, 0};
    EXPECT(cuMemHostAlloc_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_HOST_PINNED,
           .key = 0x7fff00004000ULL, .size = 16384, .device = -1);
}

static void chk_cuMemHostRegister(void)
{
    cuMemHostRegister_params p = {(void *)0x7ffe00000000ULL, 65536, 0};
    EXPECT(cuMemHostRegister, &p, ALLOC_AT_EXIT, .kind = GL_MEM_HOST_REGISTERED,
           .key = 0x7ffe00000000ULL, .size = 65536, .device = -1);
    p.p = NULL;
    EXPECT_NOTHING(cuMemHostRegister, &p);
}

static void chk_cuMemHostRegister_v2(void)
{
    cuMemHostRegister_v2_params p = {(void *)0x7ffe00100000ULL, 131072,
                                     CU_MEMHOSTREGISTER_PORTABLE};
    EXPECT(cuMemHostRegister_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_HOST_REGISTERED,
           .key = 0x7ffe00100000ULL, .size = 131072, .device = -1);
}

static void chk_cuMemAllocAsync(void)
{
    CUdeviceptr d = 0x7f0000800000ULL;
    cuMemAllocAsync_params p = {&d, 2048, (CUstream)0x5eed00};
    EXPECT(cuMemAllocAsync, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ASYNC, .key = 0x7f0000800000ULL,
           .size = 2048, .aux = 0x5eed00, .device = FROM_CTX);
    p.hStream = NULL; /* the default stream */
    EXPECT(cuMemAllocAsync, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ASYNC, .key = 0x7f0000800000ULL,
           .size = 2048, .aux = 0, .device = FROM_CTX);
    d = 0;
    EXPECT_NOTHING(cuMemAllocAsync, &p);
}

static void chk_cuMemAllocAsync_ptsz(void)
{
    CUdeviceptr d = 0x7f0000a00000ULL;
    cuMemAllocAsync_ptsz_params p = {&d, 4096, (CUstream)0x2};
    EXPECT(cuMemAllocAsync_ptsz, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ASYNC, .key = 0x7f0000a00000ULL,
           .size = 4096, .aux = 0x2, .device = FROM_CTX);
}

static void chk_cuMemAllocFromPoolAsync(void)
{
    CUdeviceptr d = 0x7f0000c00000ULL;
    cuMemAllocFromPoolAsync_params p = {&d, 3000, (CUmemoryPool)0x9001, (CUstream)0xabc000};
    EXPECT(cuMemAllocFromPoolAsync, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ASYNC,
           .key = 0x7f0000c00000ULL, .size = 3000, .aux = 0xabc000, .device = FROM_CTX);
    p.dptr = NULL;
    EXPECT_NOTHING(cuMemAllocFromPoolAsync, &p);
}

static void chk_cuMemAllocFromPoolAsync_ptsz(void)
{
    CUdeviceptr d = 0x7f0000e00000ULL;
    cuMemAllocFromPoolAsync_ptsz_params p = {&d, 5000, (CUmemoryPool)0x9002, (CUstream)0xdef000};
    EXPECT(cuMemAllocFromPoolAsync_ptsz, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ASYNC,
           .key = 0x7f0000e00000ULL, .size = 5000, .aux = 0xdef000, .device = FROM_CTX);
}

static void chk_cuMemCreate(void)
{
    CUmemGenericAllocationHandle h = 0xabc0;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 3;
    cuMemCreate_params p = {&h, (size_t)2 << 20, &prop, 0};
    EXPECT(cuMemCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_VMM, .key = VMM(0xabc0), .size = 2 << 20,
           .device = 3);
    /* Physical memory on the host has no device. */
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
    prop.location.id = 0;
    EXPECT(cuMemCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_VMM, .key = VMM(0xabc0), .size = 2 << 20,
           .device = -1);
    p.prop = NULL;
    EXPECT(cuMemCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_VMM, .key = VMM(0xabc0), .size = 2 << 20,
           .device = FROM_CTX);
    p.handle = NULL;
    EXPECT_NOTHING(cuMemCreate, &p);
}

static void chk_cuMemImportFromShareableHandle(void)
{
    CUmemGenericAllocationHandle h = 0xdd00;
    cuMemImportFromShareableHandle_params p = {&h, (void *)(uintptr_t)17,
                                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR};
    EXPECT(cuMemImportFromShareableHandle, &p, ALLOC_AT_EXIT, .kind = GL_MEM_VMM,
           .key = VMM(0xdd00), .size = 0, .device = FROM_CTX,
           .flags = GL_EVF_SIZE_UNKNOWN | GL_EVF_IMPORTED);
    p.handle = NULL;
    EXPECT_NOTHING(cuMemImportFromShareableHandle, &p);
}

static void chk_cuMemRetainAllocationHandle(void)
{
    CUmemGenericAllocationHandle h = 0xee00;
    cuMemRetainAllocationHandle_params p = {&h, (void *)0x7f1000000000ULL};
    EXPECT(cuMemRetainAllocationHandle, &p, .site = GL_SITE_EXIT, .type = GL_EV_VMM_RETAIN,
           .key = VMM(0xee00));
    p.handle = NULL;
    EXPECT_NOTHING(cuMemRetainAllocationHandle, &p);
}

static void chk_cuMemRelease(void)
{
    cuMemRelease_params p = {0xff00};
    EXPECT(cuMemRelease, &p, .site = GL_SITE_ENTER, .type = GL_EV_VMM_RELEASE, .key = VMM(0xff00));
}

static void chk_cuMemMap(void)
{
    cuMemMap_params p = {0x7f2000000000ULL, (size_t)4 << 20, 0, 0xabc0, 0};
    EXPECT(cuMemMap, &p, .site = GL_SITE_EXIT, .type = GL_EV_VMM_MAP, .key = 0x7f2000000000ULL,
           .size = 4 << 20, .aux = VMM(0xabc0));
}

static void chk_cuMemUnmap(void)
{
    cuMemUnmap_params p = {0x7f2000000000ULL, (size_t)6 << 20};
    EXPECT(cuMemUnmap, &p, .site = GL_SITE_EXIT, .type = GL_EV_VMM_UNMAP, .key = 0x7f2000000000ULL,
           .size = 6 << 20);
}

static void chk_cuArrayCreate(void)
{
    CUarray a = (CUarray)0xa1a1;
    struct legacy_array_desc d = {100, 100, CU_AD_FORMAT_FLOAT, 1};
    cuArrayCreate_params p = {&a, (const CUDA_ARRAY_DESCRIPTOR_v1 *)(const void *)&d};
    EXPECT(cuArrayCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ARRAY, .key = ARR(0xa1a1),
           .size = 40000, .device = FROM_CTX);
    /* A format of unknown size: tracked, size resolved later. */
    d.Format = (CUarray_format)0x7777;
    EXPECT(cuArrayCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ARRAY, .key = ARR(0xa1a1), .size = 0,
           .device = FROM_CTX, .flags = GL_EVF_SIZE_UNKNOWN);
    p.pAllocateArray = NULL;
    EXPECT_NOTHING(cuArrayCreate, &p);
}

static void chk_cuArrayCreate_v2(void)
{
    CUarray a = (CUarray)0xa2a2;
    CUDA_ARRAY_DESCRIPTOR d = {64, 32, CU_AD_FORMAT_UNSIGNED_INT8, 4};
    cuArrayCreate_v2_params p = {&a, &d};
    EXPECT(cuArrayCreate_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ARRAY, .key = ARR(0xa2a2),
           .size = 64 * 32 * 4, .device = FROM_CTX);
    d.Height = 0; /* 1D */
    EXPECT(cuArrayCreate_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ARRAY, .key = ARR(0xa2a2),
           .size = 64 * 4, .device = FROM_CTX);
    p.pHandle = NULL;
    EXPECT_NOTHING(cuArrayCreate_v2, &p);
}

static void chk_cuArray3DCreate(void)
{
    CUarray a = (CUarray)0xa3a3;
    struct legacy_array3d_desc d = {16, 16, 4, CU_AD_FORMAT_HALF, 2, 0};
    cuArray3DCreate_params p = {&a, (const CUDA_ARRAY3D_DESCRIPTOR_v1 *)(const void *)&d};
    EXPECT(cuArray3DCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ARRAY, .key = ARR(0xa3a3),
           .size = 16 * 16 * 4 * 2 * 2, .device = FROM_CTX);
}

static void chk_cuArray3DCreate_v2(void)
{
    CUarray a = (CUarray)0xa4a4;
    CUDA_ARRAY3D_DESCRIPTOR d = {8, 8, 8, CU_AD_FORMAT_FLOAT, 1, 0};
    cuArray3DCreate_v2_params p = {&a, &d};
    EXPECT(cuArray3DCreate_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ARRAY, .key = ARR(0xa4a4),
           .size = 8 * 8 * 8 * 4, .device = FROM_CTX);
    CUDA_ARRAY3D_DESCRIPTOR line = {1000, 0, 0, CU_AD_FORMAT_FLOAT, 1, 0};
    p.pAllocateArray = &line;
    EXPECT(cuArray3DCreate_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_ARRAY, .key = ARR(0xa4a4),
           .size = 4000, .device = FROM_CTX);
    p.pAllocateArray = NULL;
    EXPECT_NOTHING(cuArray3DCreate_v2, &p);
}

static void chk_cuMipmappedArrayCreate(void)
{
    CUmipmappedArray m = (CUmipmappedArray)0xb1b1;
    CUDA_ARRAY3D_DESCRIPTOR d = {64, 64, 0, CU_AD_FORMAT_FLOAT, 1, 0};
    cuMipmappedArrayCreate_params p = {&m, &d, 3};
    /* Levels 64x64, 32x32, 16x16 of 4-byte texels. */
    EXPECT(cuMipmappedArrayCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_MIPMAPPED_ARRAY,
           .key = MIP(0xb1b1), .size = (64 * 64 + 32 * 32 + 16 * 16) * 4, .device = FROM_CTX);
    /* Levels shrink to 1, never to 0: 4x2 -> 2x1 -> 1x1. */
    CUDA_ARRAY3D_DESCRIPTOR small = {4, 2, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0};
    p.pMipmappedArrayDesc = &small;
    p.numMipmapLevels = 3;
    EXPECT(cuMipmappedArrayCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_MIPMAPPED_ARRAY,
           .key = MIP(0xb1b1), .size = 8 + 2 + 1, .device = FROM_CTX);
    p.pMipmappedArrayDesc = NULL;
    EXPECT_NOTHING(cuMipmappedArrayCreate, &p);
}

static void chk_cuIpcOpenMemHandle(void)
{
    CUdeviceptr d = 0x7f3000000000ULL;
    cuIpcOpenMemHandle_params p;
    memset(&p, 0, sizeof p);
    p.pdptr = &d;
    p.Flags = CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS;
    EXPECT(cuIpcOpenMemHandle, &p, ALLOC_AT_EXIT, .kind = GL_MEM_IPC, .key = 0x7f3000000000ULL,
           .size = 0, .device = FROM_CTX, .flags = GL_EVF_SIZE_UNKNOWN | GL_EVF_IMPORTED);
    p.pdptr = NULL;
    EXPECT_NOTHING(cuIpcOpenMemHandle, &p);
}

static void chk_cuIpcOpenMemHandle_v2(void)
{
    CUdeviceptr d = 0x7f3000200000ULL;
    cuIpcOpenMemHandle_v2_params p;
    memset(&p, 0, sizeof p);
    p.pdptr = &d;
    EXPECT(cuIpcOpenMemHandle_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_IPC, .key = 0x7f3000200000ULL,
           .size = 0, .device = FROM_CTX, .flags = GL_EVF_SIZE_UNKNOWN | GL_EVF_IMPORTED);
    d = 0;
    EXPECT_NOTHING(cuIpcOpenMemHandle_v2, &p);
}

static void chk_cuMemPoolImportPointer(void)
{
    CUdeviceptr d = 0x7f3000400000ULL;
    cuMemPoolImportPointer_params p = {&d, (CUmemoryPool)0x9003, NULL};
    EXPECT(cuMemPoolImportPointer, &p, ALLOC_AT_EXIT, .kind = GL_MEM_IPC, .key = 0x7f3000400000ULL,
           .size = 0, .device = FROM_CTX, .flags = GL_EVF_SIZE_UNKNOWN | GL_EVF_IMPORTED);
    p.ptr_out = NULL;
    EXPECT_NOTHING(cuMemPoolImportPointer, &p);
}

static void chk_cuGraphAddMemAllocNode(void)
{
    CUDA_MEM_ALLOC_NODE_PARAMS np;
    memset(&np, 0, sizeof np);
    np.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    np.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    np.poolProps.location.id = 1;
    np.bytesize = 1 << 16;
    np.dptr = 0x7f4000000000ULL;
    CUgraphNode node = NULL;
    cuGraphAddMemAllocNode_params p = {&node, (CUgraph)0x6000, NULL, 0, &np};
    EXPECT(cuGraphAddMemAllocNode, &p, ALLOC_AT_EXIT, .kind = GL_MEM_GRAPH,
           .key = 0x7f4000000000ULL, .size = 1 << 16, .device = 1);
    p.nodeParams = NULL;
    EXPECT_NOTHING(cuGraphAddMemAllocNode, &p);
}

static void chk_cuGraphAddMemFreeNode(void)
{
    CUgraphNode node = NULL;
    cuGraphAddMemFreeNode_params p = {&node, (CUgraph)0x6000, NULL, 0, 0x7f4000000000ULL};
    EXPECT(cuGraphAddMemFreeNode, &p, FREE_AT_ENTER, .key = 0x7f4000000000ULL);
    p.dptr = 0;
    EXPECT_NOTHING(cuGraphAddMemFreeNode, &p);
}

static void graph_node_params(CUgraphNodeParams *np, CUgraphNodeType type)
{
    memset(np, 0, sizeof *np);
    np->type = type;
    if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        np->alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        np->alloc.poolProps.location.id = 2;
        np->alloc.bytesize = 3 << 20;
        np->alloc.dptr = 0x7f4400000000ULL;
    } else if (type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
        np->free.dptr = 0x7f4400000000ULL;
    }
}

static void chk_cuGraphAddNode(void)
{
    CUgraphNodeParams np;
    CUgraphNode node = NULL;
    cuGraphAddNode_params p = {&node, (CUgraph)0x6000, NULL, 0, &np};
    graph_node_params(&np, CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    EXPECT(cuGraphAddNode, &p, ALLOC_AT_EXIT, .kind = GL_MEM_GRAPH, .key = 0x7f4400000000ULL,
           .size = 3 << 20, .device = 2);
    graph_node_params(&np, CU_GRAPH_NODE_TYPE_MEM_FREE);
    EXPECT(cuGraphAddNode, &p, FREE_AT_ENTER, .key = 0x7f4400000000ULL);
    graph_node_params(&np, CU_GRAPH_NODE_TYPE_KERNEL);
    EXPECT_NOTHING(cuGraphAddNode, &p);
    graph_node_params(&np, CU_GRAPH_NODE_TYPE_MEMSET);
    EXPECT_NOTHING(cuGraphAddNode, &p);
    p.nodeParams = NULL;
    EXPECT_NOTHING(cuGraphAddNode, &p);
}

static void chk_cuGraphAddNode_v2(void)
{
    CUgraphNodeParams np;
    CUgraphNode node = NULL;
    cuGraphAddNode_v2_params p = {&node, (CUgraph)0x6000, NULL, NULL, 0, &np};
    graph_node_params(&np, CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    EXPECT(cuGraphAddNode_v2, &p, ALLOC_AT_EXIT, .kind = GL_MEM_GRAPH, .key = 0x7f4400000000ULL,
           .size = 3 << 20, .device = 2);
    graph_node_params(&np, CU_GRAPH_NODE_TYPE_MEM_FREE);
    EXPECT(cuGraphAddNode_v2, &p, FREE_AT_ENTER, .key = 0x7f4400000000ULL);
    graph_node_params(&np, CU_GRAPH_NODE_TYPE_HOST);
    EXPECT_NOTHING(cuGraphAddNode_v2, &p);
}

static void chk_cuMemFree(void)
{
    cuMemFree_params p = {0x12345600u};
    EXPECT(cuMemFree, &p, FREE_AT_ENTER, .key = 0x12345600u);
    p.dptr = 0; /* cuMemFree(0) frees nothing */
    EXPECT_NOTHING(cuMemFree, &p);
}

static void chk_cuMemFree_v2(void)
{
    cuMemFree_v2_params p = {0x7f0000200000ULL};
    EXPECT(cuMemFree_v2, &p, FREE_AT_ENTER, .key = 0x7f0000200000ULL);
    p.dptr = 0;
    EXPECT_NOTHING(cuMemFree_v2, &p);
}

static void chk_cuMemFreeHost(void)
{
    cuMemFreeHost_params p = {(void *)0x7fff00001000ULL};
    EXPECT(cuMemFreeHost, &p, FREE_AT_ENTER, .key = 0x7fff00001000ULL);
    p.p = NULL;
    EXPECT_NOTHING(cuMemFreeHost, &p);
}

static void chk_cuMemHostUnregister(void)
{
    cuMemHostUnregister_params p = {(void *)0x7ffe00000000ULL};
    EXPECT(cuMemHostUnregister, &p, FREE_AT_ENTER, .key = 0x7ffe00000000ULL);
}

static void chk_cuMemFreeAsync(void)
{
    cuMemFreeAsync_params p = {0x7f0000800000ULL, (CUstream)0x5eed00};
    EXPECT(cuMemFreeAsync, &p, FREE_AT_ENTER, .key = 0x7f0000800000ULL, .aux = 0x5eed00);
    p.dptr = 0;
    EXPECT_NOTHING(cuMemFreeAsync, &p);
}

static void chk_cuMemFreeAsync_ptsz(void)
{
    cuMemFreeAsync_ptsz_params p = {0x7f0000a00000ULL, (CUstream)0x2};
    EXPECT(cuMemFreeAsync_ptsz, &p, FREE_AT_ENTER, .key = 0x7f0000a00000ULL, .aux = 0x2);
}

static void chk_cuArrayDestroy(void)
{
    cuArrayDestroy_params p = {(CUarray)0xa1a1};
    EXPECT(cuArrayDestroy, &p, FREE_AT_ENTER, .key = ARR(0xa1a1));
    p.hArray = NULL;
    EXPECT_NOTHING(cuArrayDestroy, &p);
}

static void chk_cuMipmappedArrayDestroy(void)
{
    cuMipmappedArrayDestroy_params p = {(CUmipmappedArray)0xb1b1};
    EXPECT(cuMipmappedArrayDestroy, &p, FREE_AT_ENTER, .key = MIP(0xb1b1));
    p.hMipmappedArray = NULL;
    EXPECT_NOTHING(cuMipmappedArrayDestroy, &p);
}

static void chk_cuIpcCloseMemHandle(void)
{
    cuIpcCloseMemHandle_params p = {0x7f3000000000ULL};
    EXPECT(cuIpcCloseMemHandle, &p, FREE_AT_ENTER, .key = 0x7f3000000000ULL);
}

static void chk_cuMemPoolCreate(void)
{
    CUmemoryPool pool = (CUmemoryPool)0x5000a0;
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 2;
    cuMemPoolCreate_params p = {&pool, &props};
    EXPECT(cuMemPoolCreate, &p, ALLOC_AT_EXIT, .kind = GL_MEM_POOL_RESERVE,
           .key = gl_key_make(GL_NS_MEMPOOL, 0x5000a0), .size = 0, .device = 2,
           .flags = GL_EVF_SIZE_UNKNOWN);
    p.pool = NULL;
    EXPECT_NOTHING(cuMemPoolCreate, &p);
}

static void chk_cuMemPoolDestroy(void)
{
    cuMemPoolDestroy_params p = {(CUmemoryPool)0x5000a0};
    EXPECT(cuMemPoolDestroy, &p, FREE_AT_ENTER, .key = gl_key_make(GL_NS_MEMPOOL, 0x5000a0));
    p.pool = NULL;
    EXPECT_NOTHING(cuMemPoolDestroy, &p);
}

/* Every entry point of driver_api.def must have its checker here: a new line in
 * the .def without one fails test_every_entry_point. */
static void (*const checkers[GL_API_COUNT])(void) = {
    [GL_API_cuMemAlloc] = chk_cuMemAlloc,
    [GL_API_cuMemAlloc_v2] = chk_cuMemAlloc_v2,
    [GL_API_cuMemAllocPitch] = chk_cuMemAllocPitch,
    [GL_API_cuMemAllocPitch_v2] = chk_cuMemAllocPitch_v2,
    [GL_API_cuMemAllocManaged] = chk_cuMemAllocManaged,
    [GL_API_cuMemAllocHost] = chk_cuMemAllocHost,
    [GL_API_cuMemAllocHost_v2] = chk_cuMemAllocHost_v2,
    [GL_API_cuMemHostAlloc] = chk_cuMemHostAlloc,
    [GL_API_cuMemHostAlloc_v2] = chk_cuMemHostAlloc_v2,
    [GL_API_cuMemHostRegister] = chk_cuMemHostRegister,
    [GL_API_cuMemHostRegister_v2] = chk_cuMemHostRegister_v2,
    [GL_API_cuMemAllocAsync] = chk_cuMemAllocAsync,
    [GL_API_cuMemAllocAsync_ptsz] = chk_cuMemAllocAsync_ptsz,
    [GL_API_cuMemAllocFromPoolAsync] = chk_cuMemAllocFromPoolAsync,
    [GL_API_cuMemAllocFromPoolAsync_ptsz] = chk_cuMemAllocFromPoolAsync_ptsz,
    [GL_API_cuMemCreate] = chk_cuMemCreate,
    [GL_API_cuMemImportFromShareableHandle] = chk_cuMemImportFromShareableHandle,
    [GL_API_cuMemRetainAllocationHandle] = chk_cuMemRetainAllocationHandle,
    [GL_API_cuMemRelease] = chk_cuMemRelease,
    [GL_API_cuMemMap] = chk_cuMemMap,
    [GL_API_cuMemUnmap] = chk_cuMemUnmap,
    [GL_API_cuArrayCreate] = chk_cuArrayCreate,
    [GL_API_cuArrayCreate_v2] = chk_cuArrayCreate_v2,
    [GL_API_cuArray3DCreate] = chk_cuArray3DCreate,
    [GL_API_cuArray3DCreate_v2] = chk_cuArray3DCreate_v2,
    [GL_API_cuMipmappedArrayCreate] = chk_cuMipmappedArrayCreate,
    [GL_API_cuIpcOpenMemHandle] = chk_cuIpcOpenMemHandle,
    [GL_API_cuIpcOpenMemHandle_v2] = chk_cuIpcOpenMemHandle_v2,
    [GL_API_cuMemPoolImportPointer] = chk_cuMemPoolImportPointer,
    [GL_API_cuGraphAddMemAllocNode] = chk_cuGraphAddMemAllocNode,
    [GL_API_cuGraphAddMemFreeNode] = chk_cuGraphAddMemFreeNode,
    [GL_API_cuGraphAddNode] = chk_cuGraphAddNode,
    [GL_API_cuGraphAddNode_v2] = chk_cuGraphAddNode_v2,
    [GL_API_cuMemFree] = chk_cuMemFree,
    [GL_API_cuMemFree_v2] = chk_cuMemFree_v2,
    [GL_API_cuMemFreeHost] = chk_cuMemFreeHost,
    [GL_API_cuMemHostUnregister] = chk_cuMemHostUnregister,
    [GL_API_cuMemFreeAsync] = chk_cuMemFreeAsync,
    [GL_API_cuMemFreeAsync_ptsz] = chk_cuMemFreeAsync_ptsz,
    [GL_API_cuArrayDestroy] = chk_cuArrayDestroy,
    [GL_API_cuMipmappedArrayDestroy] = chk_cuMipmappedArrayDestroy,
    [GL_API_cuIpcCloseMemHandle] = chk_cuIpcCloseMemHandle,
    [GL_API_cuMemPoolCreate] = chk_cuMemPoolCreate,
    [GL_API_cuMemPoolDestroy] = chk_cuMemPoolDestroy,
};

/* Loop test: _i is the API id. */
START_TEST(test_every_entry_point)
{
    unsigned api = (unsigned)_i;
    ck_assert_msg(checkers[api] != NULL, "no decode test for %s (driver_api.def)",
                  gl_api_name(api));
    checkers[api]();
}
END_TEST

/* ---- the tables ---- */

static const struct {
    const char *name;
    uint32_t cbid;
    unsigned api;
} def[] = {
#define GL_DRIVER_API(name, decoder) {#name, CUPTI_DRIVER_TRACE_CBID_##name, GL_API_##name},
#include "track/driver_api.def"
#undef GL_DRIVER_API
};
#define NDEF (sizeof def / sizeof *def)

START_TEST(test_tables)
{
    ck_assert_uint_eq(NDEF, GL_API_COUNT - 1);
    for (size_t i = 0; i < NDEF; i++) {
        ck_assert_uint_eq(def[i].api, i + 1); /* the .def's order is the enum's */
        ck_assert_uint_eq(gl_decode_api_of_cbid(def[i].cbid), def[i].api);
        ck_assert_uint_eq(gl_decode_cbid_of_api(def[i].api), def[i].cbid);
        ck_assert_str_eq(gl_api_name(def[i].api), def[i].name);
        for (size_t j = 0; j < i; j++)
            ck_assert_uint_ne(def[i].cbid, def[j].cbid);
    }
    ck_assert_str_eq(gl_api_name(GL_API_NONE), "?");
    ck_assert_str_eq(gl_api_name(GL_API_COUNT), "?");
    ck_assert_uint_eq(gl_decode_cbid_of_api(GL_API_COUNT), 0);
    ck_assert_uint_eq(gl_decode_api_of_cbid(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel), GL_API_NONE);
    ck_assert_uint_eq(gl_decode_api_of_cbid(CUPTI_DRIVER_TRACE_CBID_SIZE), GL_API_NONE);
    ck_assert_uint_eq(gl_decode_api_of_cbid(0xffffffffu), GL_API_NONE);
}
END_TEST

START_TEST(test_untracked_calls)
{
    struct gl_event ev;
    memset(&ev, 0, sizeof ev);
    cuMemFree_v2_params p = {0x1000};
    ck_assert(!gl_decode(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, GL_SITE_ENTER, &p, &ev));
    ck_assert(!gl_decode(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, GL_SITE_EXIT, &p, &ev));
    ck_assert(!gl_decode(CUPTI_DRIVER_TRACE_CBID_SIZE + 5, GL_SITE_ENTER, &p, &ev));
    ck_assert(!gl_decode(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, GL_SITE_ENTER, NULL, &ev));
    ck_assert_uint_eq(ev.type, GL_EV_NONE);
}
END_TEST

START_TEST(test_mem_kind_names)
{
    ck_assert_str_eq(gl_mem_kind_name(GL_MEM_DEVICE), "device memory");
    ck_assert_str_eq(gl_mem_kind_name(GL_MEM_HOST_PINNED), "pinned host memory");
    ck_assert_str_eq(gl_mem_kind_name(GL_MEM_VMM), "VMM physical memory");
    ck_assert_str_eq(gl_mem_kind_name(GL_MEM_NKINDS), "memory");
    for (unsigned k = 0; k < GL_MEM_NKINDS; k++)
        ck_assert_ptr_nonnull(gl_mem_kind_name(k));
}
END_TEST

/* ---- array sizes ---- */

START_TEST(test_array_bytes)
{
    ck_assert_uint_eq(gl_array_bytes(100, 100, 1, 1, CU_AD_FORMAT_FLOAT), 40000);
    ck_assert_uint_eq(gl_array_bytes(100, 100, 0, 1, CU_AD_FORMAT_FLOAT), 40000);
    ck_assert_uint_eq(gl_array_bytes(100, 100, 1, 4, CU_AD_FORMAT_FLOAT), 160000);
    ck_assert_uint_eq(gl_array_bytes(10, 10, 10, 2, CU_AD_FORMAT_HALF), 4000);
    ck_assert_uint_eq(gl_array_bytes(7, 0, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8), 7); /* 0 = 1 */
    ck_assert_uint_eq(gl_array_bytes(0, 0, 0, 1, CU_AD_FORMAT_SIGNED_INT32), 4);
    /* BC1: 4 bits per texel, whatever the channel count. */
    ck_assert_uint_eq(gl_array_bytes(64, 64, 1, 4, CU_AD_FORMAT_BC1_UNORM), 64 * 64 / 2);
    ck_assert_uint_eq(gl_array_bytes(64, 64, 1, 1, CU_AD_FORMAT_BC1_UNORM), 64 * 64 / 2);
    ck_assert_uint_eq(gl_array_bytes(4, 4, 1, 4, CU_AD_FORMAT_BC7_UNORM), 16);
    /* NV12: 12 bits per texel. */
    ck_assert_uint_eq(gl_array_bytes(1920, 1080, 1, 3, CU_AD_FORMAT_NV12), 1920 * 1080 * 3 / 2);
    /* Packed formats carry their channels. */
    ck_assert_uint_eq(gl_array_bytes(10, 10, 1, 4, CU_AD_FORMAT_UNORM_INT8X4), 400);
    ck_assert_uint_eq(gl_array_bytes(10, 10, 1, 1, CU_AD_FORMAT_UNORM_INT16X4), 800);
    /* Partial bytes round up. */
    ck_assert_uint_eq(gl_array_bytes(3, 1, 1, 1, CU_AD_FORMAT_BC4_UNORM), 2);
    ck_assert_uint_eq(gl_array_bytes(1, 1, 1, 1, CU_AD_FORMAT_NV12), 2);
    /* Unknown formats. */
    ck_assert_uint_eq(gl_array_bytes(100, 100, 1, 1, 0x7777), 0);
    ck_assert_uint_eq(gl_array_bytes(100, 100, 1, 1, 0), 0);
}
END_TEST

static void handler_setup(void)
{
    gl_tracker_init();
    gl_tracker_reset();
    gl_callback_set_stacks(0);
    atomic_store(&gl_rt.state, GL_RT_TRACKING);
}

static Suite *decode_suite(void)
{
    Suite *s = suite_create("cupti_decode");
    TCase *tc = tcase_create("decode");
    tcase_add_checked_fixture(tc, handler_setup, NULL);
    tcase_add_loop_test(tc, test_every_entry_point, 1, GL_API_COUNT);
    tcase_add_test(tc, test_tables);
    tcase_add_test(tc, test_untracked_calls);
    tcase_add_test(tc, test_mem_kind_names);
    tcase_add_test(tc, test_array_bytes);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(decode_suite)
