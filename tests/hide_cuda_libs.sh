#!/bin/sh
# Run a command in a private mount namespace where the folders holding the CUDA module's CUDA
# libraries (libcudart, libcublas, as the dynamic linker resolves them) are covered by an empty
# folder: a machine without the CUDA toolkit, for this process alone.  Exits 77 (skipped) when
# mount namespaces are not allowed here (an unprivileged container, not root).
# Usage: hide_cuda_libs.sh MODULE COMMAND [ARGS...]
set -eu
module=$1
shift
dirs=$(ldd "$module" | awk '/libcudart|libcublas/ && $3 ~ /^\// {print $3}' | xargs -r -n1 dirname | sort -u)
[ -n "$dirs" ] || { echo "hide_cuda_libs: $module resolves no CUDA library"; exit 77; }
empty=$(mktemp -d)
trap 'rmdir "$empty"' EXIT
binds=""
for d in $dirs; do binds="$binds mount --bind '$empty' '$d' &&"; done
if ! unshare -m sh -c "mount --make-rprivate / 2>/dev/null; $binds true" 2>/dev/null; then
    echo "hide_cuda_libs: cannot make a private mount namespace here (needs root); skipped"
    exit 77
fi
unshare -m sh -c "mount --make-rprivate / 2>/dev/null; $binds true || exit 1
if ldd '$module' | grep -q 'libcudart.*=> /'; then
    echo 'hide_cuda_libs: libcudart is still found (another copy); skipped'; exit 77
fi
exec \"\$@\"" sh "$@"
