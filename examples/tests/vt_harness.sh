# Shared by the vt tool's test scripts, sourced after they set vt (the vt binary) and
# scratch_name (`.` takes no arguments in POSIX sh): a scratch folder as the working
# directory, and the checks.
case $vt in /*) ;; *) vt=$PWD/$vt ;; esac   # meson gives build targets relative to the build dir
work=$(mktemp -d "${TMPDIR:-/tmp}/$scratch_name.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
failures=0

# expect CODE COMMAND...: run COMMAND (output in out.txt), check its exit status.
expect() {
    want=$1
    shift
    "$@" >out.txt 2>&1
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL (exit $got, expected $want): $*"
        sed 's/^/    /' out.txt
        failures=$((failures + 1))
    else
        echo "ok   (exit $got): $*"
    fi
}

# expect_out PATTERN / expect_no PATTERN: the last command's output matches PATTERN (grep -E),
# or does not.
expect_out() {
    if ! grep -Eq -- "$1" out.txt; then
        echo "FAIL: output lacks /$1/"
        sed 's/^/    /' out.txt
        failures=$((failures + 1))
    fi
}

expect_no() {
    if grep -Eq -- "$1" out.txt; then
        echo "FAIL: output has /$1/"
        sed 's/^/    /' out.txt
        failures=$((failures + 1))
    fi
}

# finish: the verdict, as the script's exit status.
finish() {
    if [ $failures -ne 0 ]; then
        echo "$failures failure(s)"
        exit 1
    fi
    echo "all passed"
    exit 0
}
