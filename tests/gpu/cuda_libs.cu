/* SPDX-License-Identifier: MIT */
// The CUDA C++ libraries as CUDA's samples and applications use them: Thrust,
// CUB (its caching allocator too), cuRAND, cuSPARSE and cuSOLVER.
//   cuda_libs thrust|cub|curand|cusparse|cusolver
//     use the library and tear it down: nothing may be left allocated.
//   cuda_libs cub_global
//     CUB's samples' pattern: a global CachingDeviceAllocator built with
//     skip_cleanup, whose cache is still allocated at exit: 1 and 2 MiB
//     requests (CUB rounds both to its 2 MiB bin) freed into the cache, and
//     4 MiB (above its largest bin: allocated exactly) still in use.
//   cuda_libs thrust_lost
//     a device_vector made with new whose pointer the program drops: its
//     block (LOST_BYTES) is indirectly lost, held only by the lost vector.
//   cuda_libs cublas_dropped
//     the leak of many bug reports: a cuBLAS handle made per call and never
//     destroyed (DROPPED times): what cuBLAS allocated for each stays, lost
//     through the handle, at the program's line.
#include <cublas_v2.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/util_allocator.cuh>
#include <curand.h>
#include <cusolverDn.h>
#include <cusparse.h>
#include <string.h>
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/reduce.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>

#include "fixture.h"

#define EXPECT(cond)                                                                           \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "%s:%d: wrong result: %s\n", __FILE__, __LINE__, #cond);            \
            exit(98);                                                                          \
        }                                                                                      \
    } while (0)

#define LOST_BYTES (3 * 1024 * 1024)
#define DROPPED 3

static void with_thrust(void)
{
    const int n = 1 << 20;
    thrust::device_vector<int> v(n);
    thrust::sequence(v.begin(), v.end());
    thrust::sort(v.begin(), v.end(), thrust::greater<int>()); // temporary storage inside
    EXPECT(v[0] == n - 1 && v[n - 1] == 0);
    long long sum = thrust::reduce(v.begin(), v.end(), 0LL);
    EXPECT(sum == (long long)n * (n - 1) / 2);
}

static void with_cub(void)
{
    // A local allocator: its destructor frees what it cached.
    cub::CachingDeviceAllocator alloc;
    const int n = 1 << 16;
    unsigned *keys_in, *keys_out;
    CHECK(alloc.DeviceAllocate((void **)&keys_in, n * sizeof(unsigned)));
    CHECK(alloc.DeviceAllocate((void **)&keys_out, n * sizeof(unsigned)));
    unsigned *host = (unsigned *)malloc(n * sizeof(unsigned));
    for (int i = 0; i < n; i++)
        host[i] = (unsigned)(n - i);
    CHECK(cudaMemcpy(keys_in, host, n * sizeof(unsigned), cudaMemcpyHostToDevice));
    void *temp = NULL;
    size_t temp_bytes = 0;
    CHECK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, keys_in, keys_out, n));
    CHECK(alloc.DeviceAllocate(&temp, temp_bytes));
    CHECK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, keys_in, keys_out, n));
    CHECK(cudaMemcpy(host, keys_out, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    EXPECT(host[0] == 1 && host[n - 1] == (unsigned)n);
    free(host);
    CHECK(alloc.DeviceFree(temp));
    CHECK(alloc.DeviceFree(keys_in));
    CHECK(alloc.DeviceFree(keys_out));
}

static void with_curand(void)
{
    curandGenerator_t gen;
    CHECK_LIB(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10), CURAND_STATUS_SUCCESS);
    CHECK_LIB(curandSetPseudoRandomGeneratorSeed(gen, 1234), CURAND_STATUS_SUCCESS);
    float *x;
    const int n = 1 << 20;
    CHECK(cudaMalloc(&x, n * sizeof *x));
    CHECK_LIB(curandGenerateUniform(gen, x, n), CURAND_STATUS_SUCCESS);
    float first;
    CHECK(cudaMemcpy(&first, x, sizeof first, cudaMemcpyDeviceToHost));
    EXPECT(first > 0.0f && first <= 1.0f);
    CHECK_LIB(curandDestroyGenerator(gen), CURAND_STATUS_SUCCESS);
    CHECK(cudaFree(x));
}

static void with_cusparse(void)
{
    // y = A x for a diagonal 1024 x 1024 matrix A = 2 I, in CSR.
    const int n = 1024;
    int *rows_h = (int *)malloc((n + 1) * sizeof(int)), *cols_h = (int *)malloc(n * sizeof(int));
    float *vals_h = (float *)malloc(n * sizeof(float)), *x_h = (float *)malloc(n * sizeof(float));
    for (int i = 0; i < n; i++) {
        rows_h[i] = i;
        cols_h[i] = i;
        vals_h[i] = 2.0f;
        x_h[i] = (float)i;
    }
    rows_h[n] = n;
    int *rows, *cols;
    float *vals, *x, *y;
    CHECK(cudaMalloc(&rows, (n + 1) * sizeof(int)));
    CHECK(cudaMalloc(&cols, n * sizeof(int)));
    CHECK(cudaMalloc(&vals, n * sizeof(float)));
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMemcpy(rows, rows_h, (n + 1) * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(cols, cols_h, n * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(vals, vals_h, n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(x, x_h, n * sizeof(float), cudaMemcpyHostToDevice));
    cusparseHandle_t h;
    CHECK_LIB(cusparseCreate(&h), CUSPARSE_STATUS_SUCCESS);
    cusparseSpMatDescr_t a;
    cusparseDnVecDescr_t vx, vy;
    CHECK_LIB(cusparseCreateCsr(&a, n, n, n, rows, cols, vals, CUSPARSE_INDEX_32I,
                                CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
              CUSPARSE_STATUS_SUCCESS);
    CHECK_LIB(cusparseCreateDnVec(&vx, n, x, CUDA_R_32F), CUSPARSE_STATUS_SUCCESS);
    CHECK_LIB(cusparseCreateDnVec(&vy, n, y, CUDA_R_32F), CUSPARSE_STATUS_SUCCESS);
    float one = 1, zero = 0;
    size_t bytes = 0;
    CHECK_LIB(cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, vx, &zero, vy,
                                      CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, &bytes),
              CUSPARSE_STATUS_SUCCESS);
    void *buffer;
    CHECK(cudaMalloc(&buffer, bytes ? bytes : 1));
    CHECK_LIB(cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, vx, &zero, vy,
                           CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, buffer),
              CUSPARSE_STATUS_SUCCESS);
    CHECK(cudaMemcpy(x_h, y, n * sizeof(float), cudaMemcpyDeviceToHost));
    EXPECT(x_h[0] == 0.0f && x_h[n - 1] == 2.0f * (n - 1));
    CHECK_LIB(cusparseDestroyDnVec(vx), CUSPARSE_STATUS_SUCCESS);
    CHECK_LIB(cusparseDestroyDnVec(vy), CUSPARSE_STATUS_SUCCESS);
    CHECK_LIB(cusparseDestroySpMat(a), CUSPARSE_STATUS_SUCCESS);
    CHECK_LIB(cusparseDestroy(h), CUSPARSE_STATUS_SUCCESS);
    void *dev[] = {rows, cols, vals, x, y, buffer};
    for (void *p : dev)
        CHECK(cudaFree(p));
    free(rows_h);
    free(cols_h);
    free(vals_h);
    free(x_h);
}

static void with_cusolver(void)
{
    // LU of a 64 x 64 diagonally dominant matrix.
    const int n = 64;
    float *a_h = (float *)malloc(n * n * sizeof(float));
    for (int i = 0; i < n * n; i++)
        a_h[i] = (i % (n + 1)) == 0 ? (float)n : 1.0f / (float)(1 + i % 7);
    float *a, *work;
    int *pivots, *info;
    CHECK(cudaMalloc(&a, n * n * sizeof(float)));
    CHECK(cudaMalloc(&pivots, n * sizeof(int)));
    CHECK(cudaMalloc(&info, sizeof(int)));
    CHECK(cudaMemcpy(a, a_h, n * n * sizeof(float), cudaMemcpyHostToDevice));
    cusolverDnHandle_t h;
    CHECK_LIB(cusolverDnCreate(&h), CUSOLVER_STATUS_SUCCESS);
    int lwork = 0;
    CHECK_LIB(cusolverDnSgetrf_bufferSize(h, n, n, a, n, &lwork), CUSOLVER_STATUS_SUCCESS);
    CHECK(cudaMalloc(&work, (lwork ? lwork : 1) * sizeof(float)));
    CHECK_LIB(cusolverDnSgetrf(h, n, n, a, n, work, pivots, info), CUSOLVER_STATUS_SUCCESS);
    int info_h = -1;
    CHECK(cudaMemcpy(&info_h, info, sizeof info_h, cudaMemcpyDeviceToHost));
    EXPECT(info_h == 0);
    CHECK_LIB(cusolverDnDestroy(h), CUSOLVER_STATUS_SUCCESS);
    void *dev[] = {a, work, pivots, info};
    for (void *p : dev)
        CHECK(cudaFree(p));
    free(a_h);
}

// CUB's samples declare it so: the process's exit frees the cache.
static cub::CachingDeviceAllocator g_allocator(true);
void *g_in_use;

static void cub_global(void)
{
    void *one, *two;
    CHECK(g_allocator.DeviceAllocate(&one, 1 << 20));
    CHECK(g_allocator.DeviceAllocate(&two, 2 << 20));
    CHECK(g_allocator.DeviceAllocate(&g_in_use, 4 << 20));
    CHECK(cudaMemset(g_in_use, 0, 4 << 20));
    CHECK(g_allocator.DeviceFree(one)); // kept: the cache stays under max_cached_bytes
    CHECK(g_allocator.DeviceFree(two));
}

static NOINLINE void lose_vector(void)
{
    thrust::device_vector<char> *v = new thrust::device_vector<char>(LOST_BYTES); // SITE:lose_vector
    thrust::fill(v->begin(), v->end(), 1);
    // v's pointer goes out of scope: the vector and its device block are lost
}

// A product through a handle made for it, and never destroyed.
static NOINLINE void gemm_once(const float *a, float *c)
{
    cublasHandle_t h;
    CHECK_LIB(cublasCreate(&h), CUBLAS_STATUS_SUCCESS); // SITE:cublas_dropped
    float one = 1, zero = 0;
    CHECK_LIB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, a, 64, a, 64, &zero, c, 64),
              CUBLAS_STATUS_SUCCESS);
    CHECK(cudaDeviceSynchronize());
}

static void cublas_dropped(void)
{
    float *a, *c;
    CHECK(cudaMalloc(&a, 64 * 64 * sizeof(float)));
    CHECK(cudaMalloc(&c, 64 * 64 * sizeof(float)));
    CHECK(cudaMemset(a, 0, 64 * 64 * sizeof(float)));
    for (int i = 0; i < DROPPED; i++)
        gemm_once(a, c);
    CHECK(cudaFree(a));
    CHECK(cudaFree(c));
}

static const struct {
    const char *name;
    void (*run)(void);
} modes[] = {
    {"thrust", with_thrust},         {"cub", with_cub},
    {"curand", with_curand},         {"cusparse", with_cusparse},
    {"cusolver", with_cusolver},     {"cub_global", cub_global},
    {"thrust_lost", lose_vector},    {"cublas_dropped", cublas_dropped},
};

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    CHECK(cudaFree(0));
    for (const auto &m : modes)
        if (strcmp(mode, m.name) == 0) {
            m.run();
            CHECK(cudaDeviceSynchronize());
            printf("cuda_libs %s: done\n", mode);
            return 0;
        }
    fprintf(stderr, "usage: cuda_libs thrust|cub|curand|cusparse|cusolver|cub_global|thrust_lost|"
                    "cublas_dropped\n");
    return 2;
}
