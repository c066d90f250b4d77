#!/bin/sh
# Compare the dynamic symbols libvisiontrain exports with the committed list.
# Adding a symbol means adding it to tests/abi/symbols.txt; removing one is an ABI break.
# Usage: check_symbols.sh LIBRARY SYMBOLS_TXT
set -eu
lib=$1; list=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@.*//' | sort -u > "$tmp/actual"
grep -v '^#' "$list" | sed '/^$/d' | sort -u > "$tmp/expected"
status=0
missing=$(comm -23 "$tmp/expected" "$tmp/actual")
added=$(comm -13 "$tmp/expected" "$tmp/actual")
bad=$(grep -v '^vt_' "$tmp/actual" || true)
if [ -n "$missing" ]; then echo "ABI BREAK: listed in $list but no longer exported:"; echo "$missing"; status=1; fi
if [ -n "$added" ]; then echo "exported but not listed in $list (add deliberately):"; echo "$added"; status=1; fi
if [ -n "$bad" ]; then echo "exported symbols without the vt_ prefix:"; echo "$bad"; status=1; fi
[ $status -eq 0 ] && echo "abi: $(wc -l < "$tmp/actual") exported symbols match $list"
exit $status
