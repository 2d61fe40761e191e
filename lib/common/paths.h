/* SPDX-License-Identifier: MIT */
/* Where gpuleak's pieces are, wherever the tree was installed or moved to. */
#ifndef GPULEAK_PATHS_H
#define GPULEAK_PATHS_H

#include <stdbool.h>
#include <stddef.h>

/* The relative path from directory from to path to (both absolute). */
void gl_paths_relative(const char *from, const char *to, char *out, size_t outlen);

/* The default suppression files (*.supp, sorted) of the first candidate directory
 * that exists, found from a directory of the installed tree: base is the launcher's
 * bindir (base_is_libdir false) or the runtime's pkglibdir (true).  Calls fn for
 * each file; returns the number of files. */
typedef void (*gl_path_fn)(const char *path, void *arg);
int gl_paths_default_suppressions(const char *base, bool base_is_libdir, gl_path_fn fn, void *arg);

/* The directory holding the Python package (gpuleak/__init__.py), found the same
 * way: the installed tree, the sources' python/, the configured pkgdatadir. */
bool gl_paths_python_dir(const char *base, bool base_is_libdir, char *out, size_t len);

#endif
