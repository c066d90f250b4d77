#!/bin/sh
# Build the broken CUDA modules of test_cuda_module.c.
# Usage: make_fake_modules.sh OUTDIR SOURCE SRCROOT BUILDROOT CC [CC args...]
# Writes OUTDIR/fake-other-build.so, fake-no-entry.so and fake-missing-dep.so; the last needs
# libvt-test-absent.so, which is built for the link and deleted, as a missing cuBLAS would be.
set -eu
out=$1 src=$2 root=$3 build=$4
shift 4
inc="-I$root/include -I$root/lib -I$root -I$build"
"$@" -shared -fPIC $inc -DFAKE_OTHER_BUILD -o "$out/fake-other-build.so" "$src"
"$@" -shared -fPIC $inc -DFAKE_NO_ENTRY -o "$out/fake-no-entry.so" "$src"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo 'int vt_test_absent(void) { return 0; }' >"$tmp/absent.c"
"$@" -shared -fPIC -Wl,-soname,libvt-test-absent.so -o "$tmp/libvt-test-absent.so" "$tmp/absent.c"
"$@" -shared -fPIC $inc -o "$out/fake-missing-dep.so" "$src" -L"$tmp" -Wl,--no-as-needed \
    -lvt-test-absent
