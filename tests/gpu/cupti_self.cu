// A program that uses CUPTI itself before CUDA starts: gpuleak cannot subscribe,
// must say so in one line, and the program must run normally.
#include <cupti.h>

#include "fixture.h"

static void CUPTIAPI on_callback(void *u, CUpti_CallbackDomain d, CUpti_CallbackId c, const void *p)
{
    (void)u, (void)d, (void)c, (void)p;
}

int main()
{
    CUpti_SubscriberHandle sub;
    if (cuptiSubscribe(&sub, on_callback, NULL) != CUPTI_SUCCESS) {
        fprintf(stderr, "cupti_self: cuptiSubscribe failed\n");
        return 98;
    }
    void *p;
    CHECK(cudaMalloc(&p, 4096));
    CHECK(cudaFree(p));
    printf("cupti_self: done\n");
    return 0;
}
