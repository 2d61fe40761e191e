#!/bin/sh
# Write gpuleak's bash completion script to standard output, from the option
# table itself, so that it offers exactly the options the launcher takes:
#
#   completion/gen-completion.sh lib/common/options.def lib/common/leak_kind.c
#
# options.def gives each option's name, type and values (ENUM: its words;
# FLAG: yes|no; KINDSET: the leak kinds, read from leak_kind.c's names, with
# all and none; PATH and PATHLIST: file names; INT: nothing to offer);
# the launcher's own --read, --sysroot, --help and --version are added here
# (src/main.c handles them outside the table).  Run by make (Makefile.am).
set -eu
[ $# -eq 2 ] || { echo "usage: $0 options.def leak_kind.c" >&2; exit 2; }
def=$1
kinds_src=$2

# The leak kinds' option names: the strings of leak_kind.c's option_names[].
kinds=$(awk '/option_names\[/ { on = 1 }
             on { s = $0
                  while (match(s, /= "[a-z]+"/)) {
                      k = substr(s, RSTART + 3, RLENGTH - 4); printf "%s ", k
                      s = substr(s, RSTART + RLENGTH)
                  } }
             on && /};/ { exit }' "$kinds_src")
kinds=${kinds% }
[ -n "$kinds" ] || { echo "$0: no leak kinds in $kinds_src" >&2; exit 1; }

# One line per option: NAME TYPE VALUES (VALUES as in the table, "|"-separated).
table=$(awk '{ s = s $0 "\n" }
             END {
                 # Comments out (the header describes GL_OPTION itself), lines joined.
                 while (match(s, /\/\*([^*]|\*+[^*\/])*\*+\//))
                     s = substr(s, 1, RSTART - 1) substr(s, RSTART + RLENGTH)
                 gsub(/\n/, " ", s)
                 re = "GL_OPTION\\([a-z_]+, *\"[a-z-]+\", *('"'"'.'"'"'|0), *GL_OPT_[A-Z]+, *\"[^\"]*\", *\"[^\"]*\""
                 n = 0
                 while (match(s, re)) {
                     e = substr(s, RSTART, RLENGTH)
                     s = substr(s, RSTART + RLENGTH)
                     split(e, q, "\"")          # q[2]: name, q[6]: values
                     t = e; sub(/.*GL_OPT_/, "", t); sub(/,.*/, "", t)
                     short = e; sub(/^[^,]*,[^,]*, */, "", short); sub(/,.*/, "", short)
                     gsub(/'"'"'/, "", short)
                     printf "%s %s %s %s\n", q[2], t, (q[6] == "" ? "-" : q[6]), short
                     n++
                 }
                 if (n == 0) exit 1
             }' "$def") || { echo "$0: no GL_OPTION entries in $def" >&2; exit 1; }

cat <<'EOF'
# bash completion for gpuleak                                  -*- shell-script -*-
# Generated from lib/common/options.def by completion/gen-completion.sh; do not
# edit.  Completes gpuleak's options and their values, then the program and its
# arguments as bash completes them (through bash-completion when it is loaded).
EOF
echo
echo "# Every option, as typed before its value."
printf '_gpuleak_options='"'"
echo "$table" | while read -r name type values short; do
    # Bare: a count (-v, -vv) and a flag with a one-letter form (-q, --quiet).
    case $type:$short in
    COUNT:* | FLAG:[a-zA-Z]) printf -- '--%s ' "$name" ;;
    *) printf -- '--%s= ' "$name" ;;
    esac
    [ "$short" = 0 ] || printf -- '-%s ' "$short"
done
printf -- "--read= --sysroot= -h --help --version'\n\n"

cat <<'EOF'
# What the value of option $1 may be: "words W...", "kinds", "files", "dirs",
# or nothing (a number).
_gpuleak_values()
{
    case $1 in
EOF
echo "$table" | while read -r name type values short; do
    case $type in
    ENUM | FLAG) what="words $(echo "$values" | tr '|' ' ')" ;;
    KINDSET) what=kinds ;;
    PATH | PATHLIST) what=files ;;
    *) continue ;;
    esac
    printf '    --%s) echo "%s" ;;\n' "$name" "$what"
done
cat <<EOF
    --read) echo "files" ;;
    --sysroot) echo "dirs" ;;
    esac
}

_gpuleak_kinds='$kinds all none'
EOF

cat <<'EOF'

_gpuleak()
{
    COMPREPLY=()
    # The word up to the cursor, "--opt=value" whole whether or not "=" is in
    # COMP_WORDBREAKS; bash replaces only its last part, $2, with a reply.
    local line=${COMP_LINE:0:COMP_POINT}
    local full=${line##*[[:space:]]}
    local keep=$((${#full} - ${#2}))
    local -a before
    read -ra before <<<"${line:0:${#line}-${#full}}"

    # Past the options: the program and its arguments, completed as bash would.
    local i w dashdash=0 prog=""
    for ((i = 1; i < ${#before[@]}; i++)); do
        w=${before[i]}
        if ((dashdash)) || [[ $w != -* ]]; then
            prog=$w
            break
        fi
        [[ $w == -- ]] && dashdash=1
        [[ $w == --read ]] && { compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$2")); return; }
    done
    if [[ -n $prog ]] || ((dashdash)) || [[ $full != -* ]]; then
        if [[ -n $prog ]] && declare -F _command_offset >/dev/null; then
            for ((i = 1; i <= COMP_CWORD; i++)); do
                if [[ ${COMP_WORDS[i]} == "$prog" && ${COMP_WORDS[i - 1]} != "=" ]]; then
                    _command_offset "$i"
                    return
                fi
            done
        fi
        if [[ -z $prog ]]; then
            COMPREPLY=($(compgen -c -- "$2" | sort -u))
        fi
        compopt -o default 2>/dev/null
        return
    fi

    local -a cands=()
    local c
    if [[ $full == --*=* ]]; then
        local opt=${full%%=*} val=${full#*=}
        local what
        what=$(_gpuleak_values "$opt")
        case $what in
        words\ *)
            for c in ${what#words }; do
                [[ $c == "$val"* ]] && cands+=("$opt=$c")
            done
            ;;
        kinds)
            # A comma-separated set: complete its last kind.
            local done_=${val%"${val##*,}"} last=${val##*,}
            for c in $_gpuleak_kinds; do
                [[ -n $done_ && ($c == all || $c == none) ]] && continue
                [[ $c == "$last"* ]] && cands+=("$opt=$done_$c")
            done
            ;;
        files | dirs)
            local flag=-f
            [[ $what == dirs ]] && flag=-d
            compopt -o filenames 2>/dev/null
            while IFS= read -r c; do
                cands+=("$opt=$c")
            done < <(compgen "$flag" -- "$val")
            ;;
        esac
    else
        for c in $_gpuleak_options; do
            [[ $c == "$full"* ]] && cands+=("$c")
        done
    fi
    for c in "${cands[@]}"; do
        COMPREPLY+=("${c:keep}")
    done
    if [[ ${#COMPREPLY[@]} -eq 1 && $COMPREPLY == *= ]]; then
        compopt -o nospace 2>/dev/null
    fi
    return 0
}
complete -F _gpuleak gpuleak
EOF
