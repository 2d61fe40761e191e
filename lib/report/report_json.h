/* SPDX-License-Identifier: MIT */
/* The whole report as one JSON document, for scripts and dashboards.
 * Its format is documented in doc/manual.md ("The JSON report") and versioned by
 * "format_version"; fields are only ever added. */
#ifndef GPULEAK_REPORT_JSON_H
#define GPULEAK_REPORT_JSON_H

#include "report/report_text.h"

#define GL_JSON_FORMAT_VERSION 1

void gl_report_json(struct gl_out *o, const struct gl_report_input *in);

#endif
