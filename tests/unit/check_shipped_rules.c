/* SPDX-License-Identifier: MIT */
/* The suppression and classification files gpuleak ships (suppressions/, every .supp file):
 * they load cleanly, and each rule matches the stacks it was written for -
 * taken from real reports on the GPU machine (PyTorch 2.11, CuPy 14, JAX 0.11),
 * or, for RMM, written from its sources (CUB's from a program built with nvcc
 * here) - and nothing else: a framework's
 * allocations outside its cache, and the program's own, stay leaks. */
#include <check.h>
#include <string.h>

#include "testutil.h"
#include "common/error_kind.h"
#include "common/frame.h"
#include "common/leak_kind.h"
#include "common/suppressions.h"

static struct gl_supp_set set;

static void load(void)
{
    gl_suppressions_set_init(&set);
    const char *files[] = {GL_TOP_SRCDIR "/suppressions/default.supp",
                           GL_TOP_SRCDIR "/suppressions/frameworks.supp"};
    for (size_t i = 0; i < 2; i++) {
        char err[512] = "";
        ck_assert_msg(gl_suppressions_load_file(&set, files[i], err, sizeof err) == 0, "%s", err);
    }
}

static void unload(void) { gl_suppressions_set_free(&set); }

enum verdict { NONE, CACHED, SUPPRESSED };

/* Frames of these functions, innermost first (NULL-terminated, at most 32). */
static unsigned frames_of(const char *const *fun, struct gl_frame *f)
{
    unsigned n = 0;
    for (; fun[n] && n < 32; n++)
        f[n] = (struct gl_frame){.ip = 0x1000 + n, .function = fun[n], .object = "/lib/x.so"};
    return n;
}

/* What the shipped files do with a record of this kind whose stack is these
 * functions, innermost first (NULL-terminated). */
static enum verdict verdict(unsigned kind, const char *const *fun)
{
    struct gl_frame f[32];
    unsigned n = frames_of(fun, f);
    if (gl_suppressions_find(&set, GL_SUPP_CACHED, f, n, kind))
        return CACHED;
    if (gl_suppressions_find(&set, GL_SUPP_LEAK, f, n, kind))
        return SUPPRESSED;
    return NONE;
}

#define STACK(...) ((const char *const[]){__VA_ARGS__, NULL})
/* PyTorch's cuBLAS handle pool, where a build does not inline it. */
#define HANDLE_POOL_RESERVE                                                                        \
    "at::cuda::DeviceThreadHandlePool<cublasContext*, "                                            \
    "&at::cuda::(anonymous namespace)::createCublasHandle, "                                       \
    "&at::cuda::(anonymous namespace)::destroyCublasHandle>::PoolWindow::reserve(signed char)"

static const char *const torch_native[] = {
    "cudaMalloc",
    "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block(c10::cuda::"
    "CUDACachingAllocator::Native::(anonymous namespace)::AllocParams&, bool, "
    "std::shared_ptr<c10::GatheredContext> const&, std::unique_lock<std::recursive_mutex>&)",
    "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long, "
    "CUstream_st*)",
    "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed "
    "char, unsigned long, CUstream_st*)",
    "at::detail::empty_strided_generic(c10::ArrayRef<long>, c10::ArrayRef<long>, "
    "c10::Allocator*, c10::DispatchKeySet, c10::ScalarType)",
    "_PyEval_EvalFrameDefault",
    NULL};

START_TEST(test_pytorch)
{
    for (unsigned k = 0; k < GL_LEAK_NKINDS; k++)
        ck_assert_int_eq(verdict(k, torch_native), CACHED);
    ck_assert_int_eq(
        verdict(GL_LEAK_REACHABLE,
                STACK("cuMemCreate",
                      "c10::cuda::CUDACachingAllocator::Native::(anonymous "
                      "namespace)::ExpandableSegment::map(c10::cuda::CUDACachingAllocator::"
                      "Native::(anonymous namespace)::SegmentRange)",
                      "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::"
                      "map_block(c10::cuda::CUDACachingAllocator::Native::(anonymous "
                      "namespace)::Block*, unsigned long, "
                      "std::shared_ptr<c10::GatheredContext> const&)")),
        CACHED);
    ck_assert_int_eq(
        verdict(GL_LEAK_REACHABLE,
                STACK("cudaMallocAsync",
                      "c10::cuda::CUDACachingAllocator::CudaMallocAsync::(anonymous "
                      "namespace)::mallocAsync(void**, signed char, unsigned long, CUstream_st*)",
                      "c10::cuda::CUDACachingAllocator::CudaMallocAsync::"
                      "CudaMallocAsyncAllocator::allocate(unsigned long)",
                      "at::cuda::getCUDABlasLtWorkspace()")),
        CACHED);
    ck_assert_int_eq(
        verdict(GL_LEAK_REACHABLE,
                STACK("cudaHostAlloc",
                      "at::cuda::(anonymous namespace)::CUDACachingHostAllocatorImpl::"
                      "allocate_host_memory_slowpath(unsigned long, void**)",
                      "at::CachingHostAllocatorImpl<c10::cuda::CUDAStream>::allocate(unsigned "
                      "long)")),
        CACHED);
    /* The cudaMallocAsync backend has no retry: cuDNN's benchmark asks it for
     * its largest workspace by halving a cudaMallocAsync until one fits, and
     * a request that fails raises torch.OutOfMemoryError. */
    struct gl_frame f[32];
    ck_assert_ptr_nonnull(gl_suppressions_find_error(
        &set, GL_ERR_OUT_OF_MEMORY, f,
        frames_of(STACK("cudaMallocAsync",
                        "c10::cuda::CUDACachingAllocator::CudaMallocAsync::"
                        "CudaMallocAsyncAllocator::cacheInfo(signed char, unsigned long*)",
                        "at::native::getMaxWorkspaceSize()"),
                  f)));
    /* A failed allocation of the program's own is its error. */
    ck_assert_ptr_null(gl_suppressions_find_error(
        &set, GL_ERR_OUT_OF_MEMORY, f,
        frames_of(STACK("cudaMallocAsync", "my_ext::forward(at::Tensor const&)"), f)));
    /* A handle PyTorch keeps: suppressed (default.supp), not cached. */
    ck_assert_int_eq(verdict(GL_LEAK_REACHABLE, STACK("cudaMalloc", "cublasCreate_v2",
                                                      "at::cuda::getCurrentCUDABlasHandle()")),
                     SUPPRESSED);
    /* The same handle from a build that does not inline PyTorch's handle
     * pool: its frames between cublasCreate and the function that keeps it. */
    ck_assert_int_eq(
        verdict(GL_LEAK_REACHABLE,
                STACK("cudaMalloc", "cublasCreate_v2",
                      "at::cuda::(anonymous namespace)::createCublasHandle(cublasContext**)",
                      HANDLE_POOL_RESERVE, "at::cuda::getCurrentCUDABlasHandle()")),
        SUPPRESSED);
    /* ... and with createCublasHandle inlined into the pool's reserve, whose
     * template names it. */
    ck_assert_int_eq(
        verdict(GL_LEAK_REACHABLE, STACK("cudaMalloc", "cublasCreate_v2", HANDLE_POOL_RESERVE,
                                         "at::cuda::getCurrentCUDABlasHandle()")),
        SUPPRESSED);
    /* A handle some other code makes while PyTorch makes its own (an
     * allocator plugged in, creating one): that code's. */
    ck_assert_int_eq(verdict(GL_LEAK_DEFINITE,
                             STACK("cudaMalloc", "cublasCreate_v2", "my_alloc_make_handle()",
                                   "torch::cuda::CUDAPluggableAllocator::CUDAPluggableAllocator::"
                                   "allocate(unsigned long)",
                                   "at::cuda::setWorkspaceForHandle(cublasContext*, "
                                   "c10::cuda::CUDAStream)",
                                   "at::cuda::getCurrentCUDABlasHandle()")),
                     NONE);
    /* An extension's own cudaMalloc, called from PyTorch code: the user's. */
    ck_assert_int_eq(
        verdict(GL_LEAK_DEFINITE, STACK("cudaMalloc", "my_ext::forward(at::Tensor const&)",
                                        "at::native::empty_cuda(c10::ArrayRef<long>)")),
        NONE);
}
END_TEST

/* The name of the Cached rule matching these functions, innermost first; NULL if none. */
static const char *cached_by(const char *const *fun)
{
    struct gl_frame f[32];
    unsigned n = 0;
    for (; fun[n] && n < 32; n++)
        f[n] = (struct gl_frame){.ip = 0x1000 + n, .function = fun[n], .object = "/lib/x.so"};
    const struct gl_supp *c = gl_suppressions_find(&set, GL_SUPP_CACHED, f, n, GL_LEAK_REACHABLE);
    return c ? c->name : NULL;
}

#define NATIVE_ALLOCATE                                                                            \
    "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)"
/* An allocator the program plugged into PyTorch: its function, and PyTorch's
 * that calls it. */
#define MY_ALLOC "my_alloc(unsigned long, int, CUstream_st*)"
#define PLUGGED_ALLOCATE                                                                           \
    "torch::cuda::CUDAPluggableAllocator::CUDAPluggableAllocator::allocate(unsigned long)"

/* With caching off (PYTORCH_NO_CUDA_MEMORY_CACHING=1), the workspaces PyTorch
 * makes at the first matrix product and keeps are records of their own, named;
 * a tensor made on the same line is the program's.  Stacks from the H200. */
START_TEST(test_pytorch_workspaces)
{
    const char *cublas = cached_by(
        STACK("cudaMalloc", NATIVE_ALLOCATE,
              "at::cuda::setWorkspaceForHandle(cublasContext*, c10::cuda::CUDAStream)",
              "at::cuda::getCurrentCUDABlasHandle()", "at::cuda::getCUDABlasLtWorkspace()",
              "bool at::cuda::blas::gemm_and_bias<float, float>(bool, bool, long, long, long)",
              "torch::autograd::THPVariable_linear(_object*, _object*, _object*)"));
    ck_assert_ptr_nonnull(cublas);
    ck_assert_msg(strncmp(cublas, "PyTorch: cuBLAS workspace,", 26) == 0, "%s", cublas);
    const char *lt = cached_by(
        STACK("cudaMalloc", NATIVE_ALLOCATE, "at::cuda::getCUDABlasLtWorkspace()",
              "bool at::cuda::blas::gemm_and_bias<float, float>(bool, bool, long, long, long)",
              "torch::autograd::THPVariable_linear(_object*, _object*, _object*)"));
    ck_assert_ptr_nonnull(lt);
    ck_assert_msg(strncmp(lt, "PyTorch: cuBLASLt workspace,", 28) == 0, "%s", lt);
    ck_assert_ptr_nonnull(
        cached_by(STACK("cudaMalloc", NATIVE_ALLOCATE, "at::cuda::getNewWorkspace()",
                        "at::cuda::getCurrentCUDABlasHandle()")));
    /* Through an allocator the program plugged in (RMM's rmm_torch_allocator
     * is one): the program's function calls CUDA, PyTorch's calls it. */
    const char *plugged = cached_by(STACK(
        "cudaMalloc", MY_ALLOC,
        "torch::cuda::CUDAPluggableAllocator::CUDAPluggableAllocator::malloc(void**, signed char, "
        "unsigned long, CUstream_st*)",
        PLUGGED_ALLOCATE, "at::cuda::getCUDABlasLtWorkspace()",
        "bool at::cuda::blas::gemm_and_bias<float, float>(bool, bool, long, long, long)"));
    ck_assert_ptr_nonnull(plugged);
    ck_assert_msg(strncmp(plugged, "PyTorch: cuBLASLt workspace,", 28) == 0, "%s", plugged);
    /* The plugged-in allocator's own bookkeeping, lost, while it serves a
     * workspace: the program's leak (the twins match reachable blocks only). */
    const char *const side[] = {"cudaMalloc",
                                "my_alloc_bookkeeping()",
                                MY_ALLOC,
                                PLUGGED_ALLOCATE,
                                "at::cuda::getCUDABlasLtWorkspace()",
                                NULL};
    ck_assert_int_eq(verdict(GL_LEAK_DEFINITE, side), NONE);
    ck_assert_int_eq(verdict(GL_LEAK_REACHABLE, side), CACHED);
    /* The twins of getNewWorkspace and of the inlined workspace. */
    const char *old_ws =
        cached_by(STACK("cudaMalloc", MY_ALLOC, PLUGGED_ALLOCATE, "at::cuda::getNewWorkspace()",
                        "at::cuda::getCurrentCUDABlasHandle()"));
    ck_assert_ptr_nonnull(old_ws);
    ck_assert_msg(strstr(old_ws, "getNewWorkspace") && strstr(old_ws, "pluggable"), "%s", old_ws);
    const char *inl_ws = cached_by(STACK("cudaMalloc", MY_ALLOC, PLUGGED_ALLOCATE,
                                         "at::cuda::getCurrentCUDABlasHandle()",
                                         "at::native::addmm_out_cuda_impl()"));
    ck_assert_ptr_nonnull(inl_ws);
    ck_assert_msg(strstr(inl_ws, "inlined") && strstr(inl_ws, "pluggable"), "%s", inl_ws);
    /* RMM's pool plugged in, growing while PyTorch asks for a workspace: the
     * block is the pool's, the rule that says so the pool's (the workspace
     * rules come last in the file). */
    const char *grown = cached_by(
        STACK("cudaMalloc",
              "rmm::mr::cuda_memory_resource::do_allocate(unsigned long, rmm::cuda_stream_view)",
              "rmm::mr::pool_memory_resource<rmm::mr::cuda_memory_resource>::try_to_expand("
              "unsigned long, unsigned long, rmm::cuda_stream_view)",
              PLUGGED_ALLOCATE,
              "at::cuda::setWorkspaceForHandle(cublasContext*, c10::cuda::CUDAStream)"));
    ck_assert_ptr_nonnull(grown);
    ck_assert_msg(strncmp(grown, "RMM's pool_memory_resource", 26) == 0, "%s", grown);
    /* A build that inlines the workspace's allocation into
     * getCurrentCUDABlasHandle (PyTorch 2.0 to 2.2 may). */
    const char *inlined =
        cached_by(STACK("cudaMalloc", NATIVE_ALLOCATE, "at::cuda::getCurrentCUDABlasHandle()",
                        "at::native::addmm_out_cuda_impl(at::Tensor&, at::Tensor const&)"));
    ck_assert_ptr_nonnull(inlined);
    ck_assert_msg(strncmp(inlined, "PyTorch: cuBLAS workspace,", 26) == 0, "%s", inlined);
    /* The same allocator making the user's tensor: the user's. */
    ck_assert_ptr_null(cached_by(STACK("cudaMalloc", MY_ALLOC, PLUGGED_ALLOCATE,
                                       "at::native::empty_cuda(c10::ArrayRef<long>)")));
    /* The cuBLAS handle, which getCUDABlasLtWorkspace creates on first use
     * (PyTorch 2.11): the handle's memory, hidden with the handle, is no
     * workspace (seen on the H200: 1,024 + 131,072 + 67,108,864 bytes). */
    const char *const handle_in_lt[] = {
        "cudaMalloc",
        "cublasCreate_v2",
        "at::cuda::getCurrentCUDABlasHandle()",
        "at::cuda::getCUDABlasLtWorkspace()",
        "bool at::cuda::blas::gemm_and_bias<float, float>(bool, bool, long, long, long)",
        NULL};
    ck_assert_ptr_null(cached_by(handle_in_lt));
    ck_assert_int_eq(verdict(GL_LEAK_REACHABLE, handle_in_lt), SUPPRESSED);
    /* The user's tensor, made by the same call. */
    ck_assert_ptr_null(cached_by(STACK(
        "cudaMalloc", NATIVE_ALLOCATE,
        "at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, "
        "c10::ScalarType, std::optional<c10::MemoryFormat>)",
        "at::native::structured_addmm_out_cuda::impl(at::Tensor const&, at::Tensor const&)",
        "torch::autograd::THPVariable_linear(_object*, _object*, _object*)")));
    /* With caching on, the segment a workspace was carved from is the allocator's. */
    const char *seg = cached_by(STACK(
        "cudaMalloc",
        "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long, "
        "CUstream_st*)",
        "at::cuda::setWorkspaceForHandle(cublasContext*, c10::cuda::CUDAStream)"));
    ck_assert_ptr_nonnull(seg);
    ck_assert_msg(strncmp(seg, "PyTorch's caching allocator:", 28) == 0, "%s", seg);
}
END_TEST

/* The caching allocator in its generic form (a CUDA subclass of c10's
 * CachingDeviceAllocatorImpl, in PyTorch sources no release has yet): its
 * segments stay cached, a failed cudaMalloc it retries stays hidden.  The
 * frames as those sources would name them. */
static const char *const torch_generic[] = {
    "cudaMalloc",
    "c10::cuda::CUDACachingAllocator::Native::(anonymous namespace)::allocPrimitive(void**, "
    "unsigned long, c10::CachingDeviceAllocator::AllocParams<c10::cuda::CUDAStream>&)",
    "c10::cuda::CUDACachingAllocator::Native::CUDACachingDeviceAllocatorImpl::"
    "mallocMaybeCapturingWithOptionalLock(void**, c10::CachingDeviceAllocator::AllocParams<"
    "c10::cuda::CUDAStream>&, std::unique_lock<std::recursive_mutex>&)",
    "c10::CachingDeviceAllocator::CachingDeviceAllocatorImpl<c10::cuda::CUDAStream>::alloc_block("
    "c10::CachingDeviceAllocator::AllocParams<c10::cuda::CUDAStream>&, bool)",
    "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed "
    "char, unsigned long, CUstream_st*)",
    "at::detail::empty_strided_generic(c10::ArrayRef<long>, c10::ArrayRef<long>, "
    "c10::Allocator*, c10::DispatchKeySet, c10::ScalarType)",
    NULL};

START_TEST(test_pytorch_generic_allocator)
{
    for (unsigned k = 0; k < GL_LEAK_NKINDS; k++)
        ck_assert_int_eq(verdict(k, torch_generic), CACHED);
    struct gl_frame f[32];
    unsigned n = frames_of(torch_generic, f);
    ck_assert_ptr_nonnull(gl_suppressions_find_error(&set, GL_ERR_OUT_OF_MEMORY, f, n));
    /* Without caching (NativeCachingAllocator's own cudaMalloc), a tensor is
     * the user's. */
    ck_assert_int_eq(verdict(GL_LEAK_REACHABLE,
                             STACK("cudaMalloc", NATIVE_ALLOCATE,
                                   "at::detail::empty_strided_generic(c10::ArrayRef<long>, "
                                   "c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, "
                                   "c10::ScalarType)")),
                     NONE);
}
END_TEST

START_TEST(test_cupy)
{
    ck_assert_int_eq(
        verdict(GL_LEAK_REACHABLE,
                STACK("cudaMalloc",
                      "__pyx_f_13cupy_backends_4cuda_3api_7runtime_malloc(unsigned "
                      "long, int)",
                      "__pyx_pw_4cupy_4cuda_6memory_6Memory_1__init__(_object*, _object*, "
                      "_object*)",
                      "_PyObject_MakeTpCall",
                      "__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool__try_malloc(__pyx_"
                      "obj_4cupy_4cuda_6memory_SingleDeviceMemoryPool*, unsigned long)",
                      "__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool__malloc")),
        CACHED);
    ck_assert_int_eq(
        verdict(GL_LEAK_REACHABLE,
                STACK("cudaHostAlloc",
                      "__pyx_f_4cupy_4cuda_13pinned_memory_16PinnedMemoryPool_malloc")),
        CACHED);
    /* A failed cudaMalloc of the pool's is retried after it frees its free
     * blocks; one with the pool off is the program's to see. */
    struct gl_frame f[32];
    ck_assert_ptr_nonnull(gl_suppressions_find_error(
        &set, GL_ERR_OUT_OF_MEMORY, f,
        frames_of(STACK("cudaMalloc",
                        "__pyx_pw_4cupy_4cuda_6memory_6Memory_1__init__(_object*, _object*, "
                        "_object*)",
                        "_PyObject_MakeTpCall",
                        "__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool__malloc"),
                  f)));
    ck_assert_ptr_nonnull(gl_suppressions_find_error(
        &set, GL_ERR_OUT_OF_MEMORY, f,
        frames_of(
            STACK("cudaHostAlloc", "__pyx_f_4cupy_4cuda_13pinned_memory_16PinnedMemoryPool_malloc"),
            f)));
    /* MemoryAsyncPool synchronizes and retries a failed cudaMallocAsync; the
     * blocks it hands out are the program's (not cached). */
    const char *const async_pool[] = {
        "cudaMallocAsync",
        "__pyx_pw_4cupy_4cuda_6memory_11MemoryAsync_1__init__(_object*, _object*, _object*)",
        "_PyObject_MakeTpCall",
        "__pyx_f_4cupy_4cuda_6memory_malloc_async(unsigned long, int)",
        "__pyx_f_4cupy_4cuda_6memory_15MemoryAsyncPool_malloc(__pyx_obj_4cupy_4cuda_6memory_"
        "MemoryAsyncPool*, unsigned long, int)",
        NULL};
    ck_assert_ptr_nonnull(
        gl_suppressions_find_error(&set, GL_ERR_OUT_OF_MEMORY, f, frames_of(async_pool, f)));
    ck_assert_int_eq(verdict(GL_LEAK_DEFINITE, async_pool), NONE);
    ck_assert_ptr_null(gl_suppressions_find_error(
        &set, GL_ERR_OUT_OF_MEMORY, f,
        frames_of(STACK("cudaMalloc",
                        "__pyx_pw_4cupy_4cuda_6memory_6Memory_1__init__(_object*, _object*, "
                        "_object*)",
                        "__pyx_f_4cupy_4cuda_6memory_alloc(_object*, int)"),
                  f)));
    /* CuPy with its pool off (cupy.cuda.set_allocator(None)): every array is
     * the program's, reachable or lost as the scan says. */
    ck_assert_int_eq(
        verdict(GL_LEAK_DEFINITE,
                STACK("cudaMalloc",
                      "__pyx_f_13cupy_backends_4cuda_3api_7runtime_malloc(unsigned "
                      "long, int)",
                      "__pyx_pw_4cupy_4cuda_6memory_6Memory_1__init__(_object*, _object*, "
                      "_object*)",
                      "_PyObject_MakeTpCall",
                      "__pyx_pw_4cupy_4cuda_6memory_3_malloc(_object*, _object* const*, long, "
                      "_object*)",
                      "__pyx_f_4cupy_4cuda_6memory_alloc(_object*, int)")),
        NONE);
}
END_TEST

START_TEST(test_xla_and_rmm)
{
    ck_assert_int_eq(
        verdict(GL_LEAK_REACHABLE,
                STACK("cuMemAlloc_v2",
                      "stream_executor::gpu::GpuDriver::DeviceAllocate(stream_executor::gpu::"
                      "GpuContext*, unsigned long)",
                      "stream_executor::DeviceMemAllocator::Alloc(unsigned long, unsigned long, "
                      "unsigned long*)",
                      "tsl::BFCAllocator::Extend(unsigned long, unsigned long)",
                      "tsl::BFCAllocator::AllocateRawInternal(unsigned long, unsigned long, "
                      "bool, unsigned long)")),
        CACHED);
    /* Its preallocation on a GPU other processes share: the first request
     * fails, BFCAllocator::Extend asks for 10% less (as on the H200 with
     * 47 GB of 150 GB free).  A failed allocation elsewhere in XLA is not its
     * backoff and stays an error. */
    const char *const backoff[] = {
        "cuMemCreate",
        "stream_executor::gpu::CreatePhysicalAllocation(CUmemAllocationProp_st, unsigned "
        "long)::$_0::operator()(char const*) const",
        "stream_executor::gpu::CudaDeviceAllocator::Allocate(unsigned long)",
        "stream_executor::DeviceMemAllocator::Alloc(unsigned long, unsigned long, unsigned long*)",
        "tsl::BFCAllocator::Extend(unsigned long, unsigned long)",
        "tsl::BFCAllocator::AllocateRawInternal(unsigned long, unsigned long, bool, unsigned "
        "long, tsl::AllocationEnd)",
        NULL};
    struct gl_frame f[32];
    ck_assert_ptr_nonnull(
        gl_suppressions_find_error(&set, GL_ERR_OUT_OF_MEMORY, f, frames_of(backoff, f)));
    ck_assert_ptr_null(gl_suppressions_find_error(
        &set, GL_ERR_OUT_OF_MEMORY, f,
        frames_of(STACK("cuMemAlloc_v2",
                        "stream_executor::gpu::GpuDriver::DeviceAllocate(stream_executor::gpu::"
                        "GpuContext*, unsigned long)",
                        "xla::gpu::GpuExecutable::ExecuteThunks()"),
                  f)));
    /* XLA's own handles: suppressed by default.supp, not cached. */
    ck_assert_int_eq(verdict(GL_LEAK_REACHABLE, STACK("cudaMalloc", "cublasCreate_v2",
                                                      "stream_executor::cuda::CUDABlas::Init()")),
                     SUPPRESSED);
    /* RMM, old (templates) and new (detail::..._impl, a versioned namespace). */
    ck_assert_int_eq(
        verdict(GL_LEAK_REACHABLE,
                STACK("cudaMalloc",
                      "rmm::mr::cuda_memory_resource::do_allocate(unsigned long, "
                      "rmm::cuda_stream_view)",
                      "rmm::mr::pool_memory_resource<rmm::mr::cuda_memory_resource>::"
                      "try_to_expand(unsigned long, unsigned long, rmm::cuda_stream_view)")),
        CACHED);
    ck_assert_int_eq(
        verdict(GL_LEAK_REACHABLE,
                STACK("cudaMallocAsync",
                      "rmm::v26_02::mr::detail::pool_memory_resource_impl::expand_pool(unsigned "
                      "long, rmm::v26_02::mr::detail::free_list&, rmm::v26_02::cuda_stream_view)")),
        CACHED);
    ck_assert_int_eq(
        verdict(GL_LEAK_REACHABLE,
                STACK("cudaMalloc", "rmm::mr::detail::arena::global_arena::expand_arena(unsigned "
                                    "long)")),
        CACHED);
    /* RMM's plain cuda_memory_resource caches nothing: a buffer the program
     * keeps is its own. */
    ck_assert_int_eq(
        verdict(GL_LEAK_DEFINITE, STACK("cudaMalloc",
                                        "rmm::mr::cuda_memory_resource::do_allocate(unsigned long, "
                                        "rmm::cuda_stream_view)",
                                        "rmm::device_buffer::allocate_async(unsigned long)")),
        NONE);
}
END_TEST

/* CUB's caching allocator, as CUB 3.0 (CUDA 13.0) names it in a program
 * built with nvcc: a versioned inline namespace, the allocator's two
 * DeviceAllocate overloads on the stack. */
static const char *const cub_alloc[] = {
    "cudaMalloc",
    "cub::CUB_300001_SM_750::CachingDeviceAllocator::DeviceAllocate(int, void**, unsigned long, "
    "CUstream_st*)",
    "cub::CUB_300001_SM_750::CachingDeviceAllocator::DeviceAllocate(void**, unsigned long, "
    "CUstream_st*)",
    "cub_global()",
    "main",
    NULL};

START_TEST(test_cub)
{
    /* What the allocator still points to is its own; a block it no longer
     * knows (handed out by an allocator since destroyed) is the program's. */
    ck_assert_int_eq(verdict(GL_LEAK_REACHABLE, cub_alloc), CACHED);
    ck_assert_int_eq(verdict(GL_LEAK_DEFINITE, cub_alloc), NONE);
    ck_assert_int_eq(verdict(GL_LEAK_POSSIBLE, cub_alloc), NONE);
    ck_assert_int_eq(verdict(GL_LEAK_INDIRECT, cub_alloc), NONE);
    /* Its failed cudaMalloc is retried after it frees its cache. */
    struct gl_frame f[32];
    ck_assert_ptr_nonnull(
        gl_suppressions_find_error(&set, GL_ERR_OUT_OF_MEMORY, f, frames_of(cub_alloc, f)));
    /* CUB's algorithms take temporary storage from the caller, not from the
     * allocator: a buffer the program cudaMallocs for them is its own. */
    ck_assert_int_eq(verdict(GL_LEAK_DEFINITE, STACK("cudaMalloc", "with_cub()", "main")), NONE);
    ck_assert_ptr_null(gl_suppressions_find_error(&set, GL_ERR_OUT_OF_MEMORY, f,
                                                  frames_of(STACK("cudaMalloc", "main"), f)));
}
END_TEST

START_TEST(test_program_code_is_never_matched)
{
    for (unsigned k = 0; k < GL_LEAK_NKINDS; k++) {
        ck_assert_int_eq(verdict(k, STACK("cudaMalloc", "make_buffer(unsigned long)", "main")),
                         NONE);
        ck_assert_int_eq(verdict(k, STACK("cuMemAlloc_v2", "ffi_call", "_PyEval_EvalFrameDefault",
                                          "Py_BytesMain")),
                         NONE);
    }
}
END_TEST

static Suite *shipped_suite(void)
{
    Suite *s = suite_create("shipped_rules");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, load, unload);
    tcase_add_test(tc, test_pytorch);
    tcase_add_test(tc, test_pytorch_workspaces);
    tcase_add_test(tc, test_pytorch_generic_allocator);
    tcase_add_test(tc, test_cupy);
    tcase_add_test(tc, test_xla_and_rmm);
    tcase_add_test(tc, test_cub);
    tcase_add_test(tc, test_program_code_is_never_matched);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(shipped_suite)
