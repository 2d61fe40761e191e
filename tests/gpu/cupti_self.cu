/* SPDX-License-Identifier: MIT */
// A program that uses CUPTI itself before CUDA starts.  Its own callbacks must
// keep firing under gpuleak, and gpuleak must still track it: with
// --intercept=driver it leaves CUPTI alone; with --intercept=cupti it says in
// one line that CUPTI is taken and tracks at the driver's entry points instead.
#include <cupti.h>

#include "fixture.h"

static int calls;

static void CUPTIAPI on_callback(void *u, CUpti_CallbackDomain d, CUpti_CallbackId c, const void *p)
{
    (void)u, (void)d, (void)c, (void)p;
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
}

int main()
{
    CUpti_SubscriberHandle sub;
    if (cuptiSubscribe(&sub, on_callback, NULL) != CUPTI_SUCCESS) {
        fprintf(stderr, "cupti_self: cuptiSubscribe failed\n");
        return 98;
    }
    if (cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API) != CUPTI_SUCCESS) {
        fprintf(stderr, "cupti_self: cuptiEnableDomain failed\n");
        return 98;
    }
    void *p, *kept;
    CHECK(cudaMalloc(&p, 4096));
    CHECK(cudaFree(p));
    CHECK(cudaMalloc(&kept, 8192)); // leaked: gpuleak must still see it
    printf("cupti_self: %d callbacks\n", __atomic_load_n(&calls, __ATOMIC_RELAXED));
    printf("cupti_self: done\n");
    return 0;
}
