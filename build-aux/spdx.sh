#!/bin/sh
# SPDX license identifiers for gpuleak's sources (LICENSE: MIT).
#
#   build-aux/spdx.sh [--check] [DIR]
#
# Every .c, .h and .cu file under lib/ src/ include/ tests/ bench/ gets
#     /* SPDX-License-Identifier: MIT */
# as its first line, and every .py, .sh and .test file
#     # SPDX-License-Identifier: MIT
# after its "#!" line (and after a Python coding line, which must stay on the
# first two lines), or first when it has neither.  A file whose first three
# lines already hold an SPDX-License-Identifier (MIT or another license's) is
# left as it is, so running the script twice changes nothing.
#
# DIR is the top of the tree (default: the one this script is in).  In a git
# work tree only tracked files are touched, never build outputs; elsewhere (an
# unpacked release) every file of those names.  With --check nothing is
# changed: the files that lack the line are listed, and the status is 1 if
# there are any.  Exit 2 on a usage error.
set -eu

check=no
if [ "${1:-}" = "--check" ]; then
    check=yes
    shift
fi
case "${1:-}" in
-*) echo "usage: $0 [--check] [DIR]" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "usage: $0 [--check] [DIR]" >&2; exit 2; }
top=${1:-$(dirname "$0")/..}
cd "$top" || exit 2

dirs="lib src include tests bench"
list_files() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
        [ "$(git rev-parse --show-toplevel)" = "$(pwd -P)" ]; then
        # shellcheck disable=SC2086
        git ls-files -- $dirs
    else
        # shellcheck disable=SC2086
        for d in $dirs; do [ -d "$d" ] && find "$d" -type f; done
    fi
}

has_id() { head -n 3 -- "$1" | grep -q 'SPDX-License-Identifier:'; }

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT HUP INT TERM
missing=0
changed=0
# Names with newlines are not sources of this tree; names with blanks are read whole.
list_files | LC_ALL=C sort | {
    while IFS= read -r f; do
        case $f in
        *.c | *.h | *.cu) style=c ;;
        *.py | *.sh | *.test) style=hash ;;
        *) continue ;;
        esac
        [ -f "$f" ] || continue
        has_id "$f" && continue
        missing=$((missing + 1))
        if [ "$check" = yes ]; then
            echo "$f"
            continue
        fi
        if [ "$style" = c ]; then
            { echo '/* SPDX-License-Identifier: MIT */'; cat -- "$f"; } >"$tmp"
        else
            # After "#!" on line 1, then after a PEP 263 coding line on line 1 or 2.
            awk 'function put() { print "# SPDX-License-Identifier: MIT"; done = 1 }
                 function coding(s) { return s ~ /^[ \t\f]*#.*coding[:=][ \t]*[-_.a-zA-Z0-9]+/ }
                 !done && NR == 1 && /^#!/ { print; next }
                 !done && NR <= 2 && coding($0) { print; next }
                 !done { put() }
                 { print }
                 END { if (!done) put() }' "$f" >"$tmp"
        fi
        # Rewritten in place: the file keeps its mode (scripts stay executable).
        cat "$tmp" >"$f"
        changed=$((changed + 1))
    done
    if [ "$check" = yes ]; then
        [ "$missing" -eq 0 ] || { echo "spdx: $missing files lack an SPDX-License-Identifier line" >&2; exit 1; }
    else
        echo "spdx: added the line to $changed files"
    fi
}
