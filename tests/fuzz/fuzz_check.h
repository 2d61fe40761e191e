/* SPDX-License-Identifier: MIT */
/* What a fuzz target checks of every input: a violation aborts, so that
 * libFuzzer keeps the input as a crash (tests/fuzz.test prints it). */
#ifndef GPULEAK_FUZZ_CHECK_H
#define GPULEAK_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
