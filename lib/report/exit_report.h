/* The report written when the program exits (before the CUDA runtime tears
 * down): snapshot, leak check, symbolization, text. */
#ifndef GPULEAK_EXIT_REPORT_H
#define GPULEAK_EXIT_REPORT_H

/* Write the exit report once; later calls do nothing. */
void gl_exit_report(void);

#endif
