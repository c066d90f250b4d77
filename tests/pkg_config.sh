#!/usr/bin/env bash
# visiontrain.pc as a user meets it: the README's C quick-start program, compiled with
#   cc $(pkg-config --cflags ...) prog.c $(pkg-config --libs [--static] ...)
# against the installed .pc (a `meson install` into a scratch DESTDIR, found with
# --define-prefix) and against the build tree's meson-uninstalled one, each as a shared and a
# static link, then run.  The README's main() only trains, so it is compiled in and a small main
# prints the version (and checks it against the .pc): the link resolves everything the README
# calls, the run proves the program loads.
#
# usage: pkg_config.sh BUILD_DIR README.md MESON   (env: CC, VT_SANITIZE = meson's b_sanitize)
# exit 77 (skipped) when pkg-config, the C compiler or meson is missing.
set -euo pipefail
build=$1 readme=$2 meson=${3:-}
read -r -a cc <<<"${CC:-cc}"
for tool in pkg-config "${cc[0]}" "$meson"; do
  if [ -z "$tool" ] || ! command -v "$tool" >/dev/null; then
    echo "SKIP: ${tool:-meson} not found"
    exit 77
  fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vt-pkgconfig.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The README's "C and Python" section: its first ```c block.
awk '/^### C and Python/ { s = 1 } s && /^```c$/ { p = 1; next } p && /^```$/ { exit } p' \
  "$readme" >"$tmp/quick.c"
grep -q 'vt_trainer_run' "$tmp/quick.c" || { echo "FAIL: no C example found in $readme"; exit 1; }
cat >"$tmp/prog.c" <<'EOF'
#define main readme_main
#include "quick.c"
#undef main
#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--readme") == 0) /* the README program itself */
        return readme_main();
    printf("visiontrain %s abi %u\n", vt_version_string(), vt_abi_version());
    return (argc > 1 && strcmp(argv[1], vt_version_string()) != 0) ||
           vt_abi_version() != VT_ABI_VERSION;
}
EOF

# A sanitizer build's objects need the runtime, which cannot be linked statically: there the
# static variant takes libvisiontrain.a by name (what -static does to every library).
san=()
static=(-static)
if [ -n "${VT_SANITIZE:-}" ] && [ "$VT_SANITIZE" != none ]; then
  san=(-fsanitize="$VT_SANITIZE")
  static=()
fi

fail=0
# check NAME PKG shared|static ROOT LIBDIR [pkg-config options...]: the header and the library
# must come from under ROOT (not from a copy installed elsewhere); LIBDIR is where the shared
# library is found at run time.
check() {
  local name=$1 pkg=$2 kind=$3 root=$4 libdir=$5
  shift 5
  local pc=(pkg-config "$@") mode=() link=() version cflags libs header="" exe=$tmp/$name out d
  if [ "$kind" = static ]; then
    mode=(--static)
    link=("${static[@]}")
  fi
  version=$("${pc[@]}" --modversion "$pkg")
  cflags=$("${pc[@]}" "${mode[@]}" --cflags "$pkg")
  libs=$("${pc[@]}" "${mode[@]}" --libs "$pkg")
  if [ "$kind" = static ] && [ ${#static[@]} -eq 0 ]; then
    libs=${libs/-lvisiontrain/-l:libvisiontrain.a}
  fi
  echo "== $name: ${cc[*]} $cflags prog.c $libs ${link[*]}"
  for d in $cflags; do
    case $d in -I"$root"/*) [ -f "${d#-I}/visiontrain/visiontrain.h" ] && header=${d#-I} ;; esac
  done
  if [ -z "$header" ]; then
    echo "FAIL: $name: no -I folder under $root holds visiontrain/visiontrain.h"
    fail=1
    return
  fi
  case " $libs " in
    *" -L$libdir "*) ;;
    *) echo "FAIL: $name: -L$libdir missing"; fail=1; return ;;
  esac
  # shellcheck disable=SC2086  # the flags are word lists
  if ! "${cc[@]}" "${san[@]}" $cflags -o "$exe" "$tmp/prog.c" $libs "${link[@]}" >"$exe.log" 2>&1
  then
    cat "$exe.log"
    echo "FAIL: $name does not link"
    fail=1
    return
  fi
  if ! out=$(cd "$tmp" && LD_LIBRARY_PATH=$libdir "$exe" "$version" 2>&1); then
    echo "$out"
    echo "FAIL: $name does not run, or its version is not the .pc's ($version)"
    fail=1
    return
  fi
  echo "$out"
  if [ ${#link[@]} -gt 0 ] && ldd "$exe" >/dev/null 2>&1; then
    echo "FAIL: $name is not a static executable"
    fail=1
  fi
}

# Installed: into a scratch DESTDIR; --define-prefix finds it there from the .pc's location.
dest=$tmp/dest
"$meson" install -C "$build" --no-rebuild --quiet --destdir "$dest" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; echo "FAIL: meson install"; exit 1; }
pcfile=$(find "$dest" -name visiontrain.pc)
[ -n "$pcfile" ] || { echo "FAIL: no visiontrain.pc installed"; exit 1; }
export PKG_CONFIG_PATH=${pcfile%/*}
libdir=$(pkg-config --define-prefix --variable=libdir visiontrain)
check installed-shared visiontrain shared "$dest" "$libdir" --define-prefix
check installed-static visiontrain static "$dest" "$libdir" --define-prefix

# Uninstalled: the build tree's own .pc, the header from the source tree.
export PKG_CONFIG_PATH=$build/meson-uninstalled
src=$(cd "${readme%/*}" && pwd)
check uninstalled-shared visiontrain-uninstalled shared "$src" "$build"
check uninstalled-static visiontrain-uninstalled static "$src" "$build"
exit $fail
