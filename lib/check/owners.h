/* SPDX-License-Identifier: MIT */
/* Who owns memory: the program, an NVIDIA library it uses, CUDA itself, or
 * gpuleak.  The reachability scan roots itself in the writable segments of
 * the program's own modules only, and never enters chunks that CUDA or gpuleak
 * allocated (see reach.h for why).
 *
 *   APP   the program, its interpreter, frameworks, C and C++ libraries: its
 *         writable segments are roots, its chunks are followed.
 *   LIB   NVIDIA's libraries (cuBLAS, cuDNN, NCCL, ...): their chunks are
 *         followed when the program reaches them (a live cuBLAS handle keeps its
 *         workspace reachable), their segments are not roots.
 *   CUDA  the driver, the CUDA runtime (shared, or the internals of a static
 *         one, told apart by symbol), CUPTI: never roots, never followed.
 *   TOOL  gpuleak and the libraries it loads: never roots, never followed.
 *   TEXT  the program's, but characters only: the buffers of the C library's
 *         stdio streams and of libstdc++'s file streams (a chunk's allocation
 *         caller tells them).  Never followed: past the text written, a
 *         buffer holds what its chunk held before, and a stale device address
 *         there made a lost block "possibly lost" in every program that
 *         printed to a pipe.
 *
 * Built once per check before the world is stopped (it calls the loader and
 * allocates); lookups afterwards read only its arrays. */
#ifndef GPULEAK_OWNERS_H
#define GPULEAK_OWNERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gl_owner { GL_OWNER_APP = 0, GL_OWNER_LIB, GL_OWNER_CUDA, GL_OWNER_TOOL, GL_OWNER_TEXT };

/* By a loaded object's path (its file name decides). */
enum gl_owner gl_owners_of_path(const char *path);
/* Whether the loaded object at path is the C library (its file name). */
bool gl_owners_is_libc(const char *path);

struct gl_segment {
    uint64_t start, end;
};

struct gl_owner_module {
    uint64_t text_start, text_end; /* its executable segments' span */
    enum gl_owner owner;
    int has_cudart;  /* a static CUDA runtime was seen in it (gl_owners_probe_cudart) */
    int has_streams; /* the C library or libstdc++: their stream buffers are TEXT */
};

struct gl_owners {
    struct gl_owner_module *modules; /* sorted by text_start */
    size_t nmodules;
    struct gl_segment *roots; /* writable segments of APP modules */
    size_t nroots;
    uint8_t *callers; /* enum gl_owner of each caller id (callers.h), [0, GL_CALLERS_MAX] */
    size_t modules_cap, roots_cap;
};

/* The name of the function at ip, or NULL: to tell a static CUDA runtime's
 * internals (and its API functions) inside the program's own modules. */
typedef const char *(*gl_function_name_fn)(uintptr_t ip, void *arg);

/* Read the loaded objects.  Returns 0, -1 if out of memory. */
int gl_owners_load(struct gl_owners *o);

/* A static CUDA runtime lives inside the program's modules, where only symbol
 * names tell it apart.  Naming every caller would cost minutes in a process
 * such as PyTorch's (tens of thousands of callers, libraries with a million
 * symbols, and a symbol lookup that scans them all), so only modules where a
 * static runtime was seen are named: the allocation stacks show where.  ip is
 * a frame of an allocation stack (a return address) in an APP module; if the
 * function there is a static runtime's, its module is flagged.  The first
 * such frame of each distinct stack is enough: the runtime calls the driver. */
void gl_owners_probe_cudart(struct gl_owners *o, uintptr_t ip, gl_function_name_fn name, void *arg);

/* Classify every interned caller (callers.h), naming only those in flagged
 * modules, and the C library's and libstdc++'s by their exported symbols
 * (dladdr: stream buffers are TEXT).  Returns 0, -1 if out of memory. */
int gl_owners_classify_callers(struct gl_owners *o, gl_function_name_fn name, void *arg);

/* The module holding ip, or NULL. */
const struct gl_owner_module *gl_owners_module_of(const struct gl_owners *o, uintptr_t ip);
void gl_owners_free(struct gl_owners *o);

enum gl_owner gl_owners_of_ip(const struct gl_owners *o, uintptr_t ip);

/* Is this the name of a static CUDA runtime's function (internal or API)? */
int gl_owners_cudart_function(const char *name);

#endif
