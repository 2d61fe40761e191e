/* SPDX-License-Identifier: MIT */
/* Symbolization with libdw, at report time only and only for printed stacks.
 *
 * Maps an instruction address to function (C++ demangled), source file and line
 * where debug information exists, else the object it lies in.  Results are cached
 * per address; strings stay valid until gl_symbolize_close(). */
#ifndef GPULEAK_SYMBOLIZE_H
#define GPULEAK_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/frame.h"

struct gl_symbolizer;

struct gl_unloaded_object;

/* Symbolize from these objects (n of them, maybe none), at their saved
 * addresses, instead of the process's own (a saved log's modules:
 * save/log_reader.h); objs NULL: the process's again.  Kept by pointer. */
void gl_symbolize_set_objects(const struct gl_unloaded_object *objs, size_t n);

/* Objects known by name only (a saved log's binaries missing here): a frame
 * in one is shown with the object's name.  NULL: none.  Kept by pointer. */
void gl_symbolize_set_object_names(const struct gl_unloaded_object *objs, size_t n);

/* Open over the current process's loaded objects; NULL if libdw fails. */
struct gl_symbolizer *gl_symbolize_open(void);
void gl_symbolize_close(struct gl_symbolizer *s);

/* The symbolizer kept in *sym, opened if there is none, reopened when objects
 * were loaded or unloaded since *objects was taken: it knows only the objects
 * loaded when it was opened.  Each user keeps its own (the leak run, and the
 * error sink, which runs inside CUDA calls and must not wait for a check). */
struct gl_symbolizer *gl_symbolize_fresh(struct gl_symbolizer **sym, unsigned long long *objects);

/* is_return_address: ip is a return address (every frame but a signal frame's),
 * so the call instruction is looked up at ip - 1. */
void gl_symbolize(struct gl_symbolizer *s, uintptr_t ip, bool is_return_address,
                  struct gl_frame *out);


#endif
