/* SPDX-License-Identifier: MIT */
/* A leaked block whose interior address sits, stale, in stdout's buffer: the
 * chunk the buffer is made in held it before (as a chunk the CUDA runtime
 * freed did on the two-GPU suite's leak_one), past the text written.  The
 * block must be reported definitely lost, not possibly lost: the buffer
 * holds characters (check/owners.h, TEXT). */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int main(void)
{
    CUdeviceptr leaked = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuMemAlloc_v2(&leaked, 1 << 20) != CUDA_SUCCESS)
        return 1;
    /* glibc's buffer is st_blksize bytes, at most BUFSIZ, allocated at the
     * first write: a chunk of that size freed just before is what it gets. */
    struct stat st;
    size_t size = BUFSIZ;
    if (fstat(1, &st) == 0 && st.st_blksize > 0 && st.st_blksize < BUFSIZ)
        size = (size_t)st.st_blksize;
    uint64_t *old = malloc(size);
    if (!old)
        return 2;
    for (size_t i = 0; i < size / sizeof *old; i++)
        old[i] = (uint64_t)leaked + 4096;
    free(old);
    printf("stdio_stale: done\n");
    /* Stated, so that a failure says whether the premise held. */
    fprintf(stderr, "stdio_stale: buffer %s the freed chunk\n",
            stdout->_IO_buf_base == (char *)old ? "is" : "is not");
    return 0;
}
