/* SPDX-License-Identifier: MIT */
/* CUPTI, loaded with dlopen when CUDA initializes.
 *
 * libgpuleak is preloaded into every process the program starts, most of which
 * never use CUDA; linking libcupti would load it (tens of MB) into all of them.
 * CUPTI is found, in order: $GPULEAK_CUPTI_PATH; a copy already loaded; beside the
 * loaded CUDA runtime (pip's nvidia packages); the toolkit gpuleak was built with;
 * the dynamic linker's search path. */
#ifndef GPULEAK_CUPTI_LOADER_H
#define GPULEAK_CUPTI_LOADER_H

#include <cupti.h>
#include <stdbool.h>
#include <stddef.h>

struct gl_cupti {
    void *handle;
    char path[4096];
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
                                CUpti_SubscriberParams *); /* may be NULL (older CUPTI) */
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                   CUpti_CallbackId);
    CUptiResult (*get_result_string)(CUptiResult, const char **);
    CUptiResult (*get_device_id)(CUcontext, uint32_t *);
};

/* Load CUPTI into *c.  Returns true, or false with one line in err. */
bool gl_cupti_loader_load(struct gl_cupti *c, char *err, size_t errlen);

/* Text of a CUPTI result code (never NULL). */
const char *gl_cupti_loader_result_string(const struct gl_cupti *c, CUptiResult r);

#endif
