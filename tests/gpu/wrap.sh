#!/bin/sh
# SPDX-License-Identifier: MIT
# A shell between gpuleak and the program, as test scripts and launchers are.
#   wrap.sh PROGRAM ARGS...         runs it as a child, then exits with its status
#   wrap.sh --exec PROGRAM ARGS...  replaces itself with it
# Expected: the program's report only; the shell, which never uses CUDA, writes nothing.
echo "wrap.sh: pid $$"
if [ "$1" = "--exec" ]; then
    shift
    exec "$@"
fi
"$@"
st=$?
echo "wrap.sh: child exited with $st"
exit $st
