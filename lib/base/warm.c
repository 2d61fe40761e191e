/* SPDX-License-Identifier: MIT */
#include "base/warm.h"

#include <stdlib.h>

GL_READ_MOSTLY int gl_warm_mode = GL_WARM_PREFETCH;

void gl_warm_init(void)
{
    const char *loads = getenv("GPULEAK_DEBUG_WARM_LOADS");
    if (loads && *loads == '1')
        gl_warm_mode = GL_WARM_LOADS;
}
