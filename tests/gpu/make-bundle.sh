#!/bin/sh
# SPDX-License-Identifier: MIT
# Build a self-contained copy of gpuleak under bundle/ for the GPU machine, which
# has no libunwind, libdw or libcheck and no package registry.  The runtime
# dlopens libunwind and libdw; it finds the copies beside it through its $ORIGIN
# rpath (libelf is libdw's own dependency, found the same way).
#   make gpu-bundle   (runs this with the fixtures and benchmarks to copy)
set -eu
: "${top_builddir:?}" "${MAKE:=make}"
B="$top_builddir/bundle"
rm -rf "$B"
$MAKE -C "$top_builddir" install prefix="$B" >/dev/null
rt="$B/lib/gpuleak/libgpuleak.so"
for lib in libunwind.so.8 libdw.so.1 libelf.so.1; do
    path=$(/sbin/ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ { print $NF; exit }')
    [ -n "$path" ] || { echo "make-bundle: $lib not found (ldconfig -p)" >&2; exit 1; }
    cp -L "$path" "$B/lib/gpuleak/"
done
for f in "$@"; do
    mkdir -p "$B/$(dirname "$f")"
    cp "$top_builddir/$f" "$B/$f"
done
echo "bundle ready: $B ($(du -sh "$B" | cut -f1))"
