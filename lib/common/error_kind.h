/* SPDX-License-Identifier: MIT */
/* Kinds of error (track/errors.h): API misuse, and growth (check/growth.h).  Their names are the
 * suppression kinds (gpuleak:InvalidFree) and the XML <kind>s, so the
 * suppression parser, shared with the launcher, knows them from here. */
#ifndef GPULEAK_ERROR_KIND_H
#define GPULEAK_ERROR_KIND_H

/* Append only. */
enum gl_error_kind {
    GL_ERR_NONE = 0,
    GL_ERR_INVALID_FREE,    /* a release of an address never allocated, or of a block's interior */
    GL_ERR_DOUBLE_FREE,     /* a release of a block already freed */
    GL_ERR_MISMATCHED_FREE, /* released by the wrong call, or on another device's stream */
    GL_ERR_INVALID_RANGE,   /* a copy or set running past the end of its block */
    GL_ERR_FREED_RANGE,     /* a copy or set touching a freed block */
    GL_ERR_OUT_OF_MEMORY,   /* an allocation failed with CUDA_ERROR_OUT_OF_MEMORY */
    GL_ERR_GROWTH,          /* a site's live bytes grew at --growth-checkpoints checkpoints */
    GL_ERR_OBSERVER_MISMATCH, /* --intercept=both: one observer saw a call the other did not */
    GL_ERR_NKINDS
};

/* "InvalidFree", "DoubleFree", "MismatchedFree", "InvalidRange", "FreedRange",
 * "OutOfMemory", "Growth", "ObserverMismatch"; NULL for GL_ERR_NONE or out of range. */
const char *gl_error_kind_name(unsigned kind);
/* The kind named so; GL_ERR_NONE if none is. */
enum gl_error_kind gl_error_kind_parse(const char *name);

#endif
