/* SPDX-License-Identifier: MIT */
/* check_util's other half: GL_ASSERT compiled out, as in the runtime. */
#undef GL_ASSERTIONS
#include "common/util.h"

int util_off_assert_evaluations(void);

static int evaluations;

static int count(void) { return ++evaluations; }

/* How often a false GL_ASSERT evaluated its condition (0: it did not abort). */
int util_off_assert_evaluations(void)
{
    evaluations = 0;
    GL_ASSERT(count() == 1000, "never checked");
    GL_ASSERT(0, "compiled out");
    return evaluations;
}
