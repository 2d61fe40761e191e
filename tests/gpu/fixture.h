/* SPDX-License-Identifier: MIT */
/* Shared by the GPU test programs: every CUDA call is checked, so a fixture that
 * runs but silently fails cannot pass as "no leak". */
#ifndef GPULEAK_FIXTURE_H
#define GPULEAK_FIXTURE_H

#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                            \
    do {                                                                                       \
        cudaError_t err_ = (call);                                                             \
        if (err_ != cudaSuccess) {                                                             \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,               \
                    cudaGetErrorString(err_));                                                 \
            exit(99);                                                                          \
        }                                                                                      \
    } while (0)

#define CHECK_CU(call)                                                                         \
    do {                                                                                       \
        CUresult err_ = (call);                                                                \
        if (err_ != CUDA_SUCCESS) {                                                            \
            const char *s_ = "?";                                                              \
            cuGetErrorString(err_, &s_);                                                       \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, s_);          \
            exit(99);                                                                          \
        }                                                                                      \
    } while (0)

/* A CUDA library's call, checked against its own success status. */
#define CHECK_LIB(call, ok)                                                                    \
    do {                                                                                       \
        if ((call) != (ok)) {                                                                  \
            fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #call);                  \
            exit(99);                                                                          \
        }                                                                                      \
    } while (0)

#define NOINLINE __attribute__((noinline))

#endif
