/* SPDX-License-Identifier: MIT */
// What CUDA libraries leave allocated after a correct teardown: each mode creates
// a library handle, uses it, destroys it, and frees everything it allocated
// itself.  Whatever gpuleak still reports comes from inside the library, which
// the program cannot free: the default suppressions (suppressions/*.supp) hide it.
//   lib_noise cublas|cublaslt|cudnn|nccl|cufft
#include <cublas_v2.h>
#include <cudnn.h>
#include <cufft.h>
#include <nccl.h>
#include <string.h>

#include "fixture.h"

static void with_cublas(void)
{
    float *a, *b, *c;
    CHECK(cudaMalloc(&a, 256 * 256 * 4));
    CHECK(cudaMalloc(&b, 256 * 256 * 4));
    CHECK(cudaMalloc(&c, 256 * 256 * 4));
    cublasHandle_t h;
    CHECK_LIB(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
    float one = 1, zero = 0;
    CHECK_LIB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 256, 256, 256, &one, a, 256, b, 256, &zero, c,
                          256),
              CUBLAS_STATUS_SUCCESS);
    CHECK(cudaDeviceSynchronize());
    CHECK_LIB(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    CHECK(cudaFree(c));
}

static void with_cudnn(void)
{
    cudnnHandle_t h;
    CHECK_LIB(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
    cudnnTensorDescriptor_t d;
    CHECK_LIB(cudnnCreateTensorDescriptor(&d), CUDNN_STATUS_SUCCESS);
    CHECK_LIB(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 8, 32, 32),
              CUDNN_STATUS_SUCCESS);
    float *x, *y;
    CHECK(cudaMalloc(&x, 8 * 32 * 32 * 4));
    CHECK(cudaMalloc(&y, 8 * 32 * 32 * 4));
    float one = 1, zero = 0;
    CHECK_LIB(cudnnAddTensor(h, &one, d, x, &zero, d, y), CUDNN_STATUS_SUCCESS);
    CHECK(cudaDeviceSynchronize());
    CHECK_LIB(cudnnDestroyTensorDescriptor(d), CUDNN_STATUS_SUCCESS);
    CHECK_LIB(cudnnDestroy(h), CUDNN_STATUS_SUCCESS);
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
}

static void with_nccl(void)
{
    ncclComm_t comm;
    int dev = 0;
    CHECK_LIB(ncclCommInitAll(&comm, 1, &dev), ncclSuccess);
    float *buf;
    CHECK(cudaMalloc(&buf, 1024 * 4));
    CHECK_LIB(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, comm, 0), ncclSuccess);
    CHECK(cudaDeviceSynchronize());
    CHECK_LIB(ncclCommDestroy(comm), ncclSuccess);
    CHECK(cudaFree(buf));
}

static void with_cufft(void)
{
    cufftHandle plan;
    CHECK_LIB(cufftPlan1d(&plan, 4096, CUFFT_C2C, 16), CUFFT_SUCCESS);
    cufftComplex *x;
    CHECK(cudaMalloc(&x, 4096 * 16 * sizeof *x));
    CHECK_LIB(cufftExecC2C(plan, x, x, CUFFT_FORWARD), CUFFT_SUCCESS);
    CHECK(cudaDeviceSynchronize());
    CHECK_LIB(cufftDestroy(plan), CUFFT_SUCCESS);
    CHECK(cudaFree(x));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    CHECK(cudaFree(0));
    if (strcmp(mode, "cublas") == 0)
        with_cublas();
    else if (strcmp(mode, "cudnn") == 0)
        with_cudnn();
    else if (strcmp(mode, "nccl") == 0)
        with_nccl();
    else if (strcmp(mode, "cufft") == 0)
        with_cufft();
    else {
        fprintf(stderr, "usage: lib_noise cublas|cudnn|nccl|cufft\n");
        return 2;
    }
    printf("lib_noise %s: done\n", mode);
    return 0;
}
