#!/bin/sh
# The README's commands, run as written: every ```sh block of README.md in order (sh -e), each
# ```c block saved as quick.c (the README's next sh block compiles and runs it), each ```python
# block run by python3 in a fresh subfolder.  They run in a scratch folder that mirrors the source tree (a link to
# each top-level entry; build/ is the build tree), with the build tree's vt on PATH and the
# build tree's library found by pkg-config, the dynamic loader and the Python bindings of
# this tree.  A block directly below an HTML comment "<!-- readme-test: skip REASON -->" is
# not run (the README's opening comment states the convention).  On a failure it prints the
# block, where it starts in README.md and the block's output (sh -x: the failing command is
# the last traced line) and exits 1.
#
#   test_readme.sh SOURCE_ROOT BUILD_DIR [PYTHON]
#   env: VT_SANITIZE (meson's b_sanitize), VT_PY_PRELOAD (the sanitizer runtime for python)
set -u
src=$1 build=$2 python=${3:-}
case $src in /*) ;; *) src=$PWD/$src ;; esac
case $build in /*) ;; *) build=$PWD/$build ;; esac
readme=$src/README.md
[ -f "$readme" ] || { echo "FAIL: no $readme"; exit 1; }
[ -x "$build/examples/vt" ] || { echo "FAIL: no $build/examples/vt (build first)"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/vt-readme.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM
blocks=$work/.readme-blocks
mkdir "$blocks" || exit 1

# The source tree's top-level entries (not its build folders), then the build tree as build/.
for entry in "$src"/* "$src"/.[!.]*; do
    [ -e "$entry" ] || continue
    name=${entry##*/}
    case $name in build | build-* | .git) continue ;; esac
    ln -s "$entry" "$work/$name"
done
ln -s "$build" "$work/build"

# Split README.md into blocks: NNN.LANG (or NNN.skip.LANG), and NNN.line = the opening fence's
# line number.  A skip marker without a reason is an error (exit 2 from awk).
awk -v dir="$blocks" '
    function out(ext) { return sprintf("%s/%03d.%s", dir, n, ext) }
    fence == "" && /^<!-- readme-test: skip/ {
        if ($0 !~ /^<!-- readme-test: skip [^ ].*-->$/) {
            printf "README.md:%d: a skip marker needs a reason: %s\n", NR, $0; bad = 1
        }
        skip = 1; next
    }
    fence == "" && /^```(sh|c|python)$/ {
        n++; fence = substr($0, 4)
        file = out((skip ? "skip." : "") fence)
        printf "" > file
        print NR > out("line")
        skip = 0; next
    }
    fence != "" && /^```$/ { close(file); fence = ""; next }
    fence != "" { print > file; next }
    /[^ \t]/ { skip = 0 }
    END { if (fence != "") { print "README.md: unclosed ``` block"; bad = 1 } exit bad ? 2 : 0 }
' "$readme" || { echo "FAIL: README.md's blocks"; exit 1; }

PATH=$build/examples:$PATH
PKG_CONFIG_PATH=$build/meson-uninstalled${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
LD_LIBRARY_PATH=$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
VT_LIBRARY=$build/libvisiontrain.so.0
PYTHONPATH=$src/bindings/python${PYTHONPATH:+:$PYTHONPATH}
PYTHONDONTWRITEBYTECODE=1
export PATH PKG_CONFIG_PATH LD_LIBRARY_PATH VT_LIBRARY PYTHONPATH PYTHONDONTWRITEBYTECODE

# In a sanitizer build the library needs the sanitizer's runtime in the program that links it.
preamble=$blocks/preamble.sh
: >"$preamble"
if [ -n "${VT_SANITIZE:-}" ] && [ "$VT_SANITIZE" != none ]; then
    echo "cc() { command cc -fsanitize=$VT_SANITIZE \"\$@\"; }" >"$preamble"
fi

ran=0 skipped=0
cd "$work" || exit 1
for file in "$blocks"/[0-9][0-9][0-9].*; do
    base=${file##*/}
    num=${base%%.*}
    kind=${base#*.}
    [ "$kind" = line ] && continue
    line=$(cat "$blocks/$num.line")
    case $kind in
    skip.*)
        echo "skip README.md:$line (${kind#skip.} block, marked skip)"
        skipped=$((skipped + 1))
        continue ;;
    c)
        cp "$file" quick.c
        echo "ok   README.md:$line (c block saved as quick.c)"
        continue ;;
    sh)
        cat "$preamble" "$file" >"$blocks/run.sh"
        set -- sh -e -x "$blocks/run.sh" ;;
    python)
        if [ -z "$python" ]; then
            echo "skip README.md:$line (python block: no python3)"
            skipped=$((skipped + 1))
            continue
        fi
        # a Python user starts afresh: its own empty folder (the block makes its dataset)
        mkdir "py$num"
        set -- env -C "py$num" \
            ${VT_PY_PRELOAD:+LD_PRELOAD=$VT_PY_PRELOAD ASAN_OPTIONS=detect_leaks=0} \
            "$python" "$file" ;;
    *)
        echo "FAIL: README.md:$line: unknown block kind $kind"
        exit 1 ;;
    esac
    start=$(date +%s)
    if "$@" >"$blocks/log" 2>&1; then
        echo "ok   README.md:$line ($kind block, $(($(date +%s) - start)) s)"
        ran=$((ran + 1))
    else
        status=$?
        echo "FAIL README.md:$line ($kind block, exit $status); the block:"
        sed 's/^/    /' "$file"
        echo "its output (the last '+' line is the failing command):"
        sed 's/^/    /' "$blocks/log"
        exit 1
    fi
done
if [ $ran -eq 0 ]; then
    echo "FAIL: no block of README.md ran"
    exit 1
fi
echo "all passed: $ran blocks ran, $skipped skipped"
