/* SPDX-License-Identifier: MIT */
/* A device's free and total memory at the moment an allocation fails, for the
 * out-of-memory report.  Asked of NVML (libnvidia-ml.so.1, installed with the
 * driver, dlopen'ed; no build-time dependency), never of CUDA: the report is
 * made inside the failing CUDA call, where the driver must not be re-entered.
 *
 * NVML numbers devices in PCI order; CUDA in CUDA_VISIBLE_DEVICES's order of
 * its own enumeration (fastest first, unless CUDA_DEVICE_ORDER=PCI_BUS_ID).
 * The ordinal is mapped when that is certain: by UUID when CUDA_VISIBLE_DEVICES
 * names them, by PCI order when CUDA_DEVICE_ORDER=PCI_BUS_ID or every device is
 * the same model (CUDA's fastest-first order then falls back to PCI order).
 * Otherwise, and for MIG instances, the answer is "unknown". */
#ifndef GPULEAK_DEVICE_MEMORY_H
#define GPULEAK_DEVICE_MEMORY_H

#include <stdbool.h>
#include <stdint.h>

/* Look up NVML (no initialization yet).  Call outside callbacks. */
void gl_device_memory_load(void);
/* Free and total bytes of CUDA device ordinal `device`; false if unknown. */
bool gl_device_memory_query(int device, uint64_t *free_bytes, uint64_t *total_bytes);

#endif
