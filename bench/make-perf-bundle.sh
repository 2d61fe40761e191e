#!/bin/sh
# SPDX-License-Identifier: MIT
# Copy this machine's perf and the shared libraries it needs into perf-bundle/
# (git-ignored), for the GPU machine, which has no perf: carry it there beside
# bundle/ and run bench/profile.  About 34 MB.
set -e
out=${1:-perf-bundle}
perf=$(command -v perf || true)
if [ -z "$perf" ]; then
    echo "make-perf-bundle: no perf here: apt-get install linux-perf" >&2
    exit 1
fi
rm -rf "$out"
mkdir -p "$out/lib"
cp "$perf" "$out/perf"
# The C library and the loader are the GPU machine's own.
ldd "$perf" | awk '$3 ~ /^\// {print $3}' | grep -v -e '/libc\.so' -e '/libm\.so' -e '/ld-linux' |
    while read -r lib; do cp -L "$lib" "$out/lib/"; done
echo "perf bundle ready: $out ($(du -sh "$out" | cut -f1))"
