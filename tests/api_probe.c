/* SPDX-License-Identifier: MIT */
/* A program that asks gpuleak.h whether it runs under gpuleak, for
 * tests/launcher.test: under the launcher, and exec'ed from there without the
 * runtime (it must then say no, not follow the inherited address). */
#include <stdio.h>

#include "gpuleak.h"

int main(void)
{
    printf("running=%d checkpoint=%d\n", gpuleak_running(), gpuleak_checkpoint("probe"));
    return 0;
}
