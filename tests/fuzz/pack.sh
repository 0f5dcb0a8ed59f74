#!/usr/bin/env bash
# Packs the files of a directory into one fuzz_snapshot input (see
# fuzz_snapshot.c): NAME '\0' LENGTH (4 bytes, little endian) BYTES, repeated.
#   tests/fuzz/pack.sh DIR > OUT
# snapshot.ini comes first, then the other .ini files, then the rest from the
# smallest up: a fuzzer that cuts inputs to a length (-max_len) then cuts the
# memory dumps and trace, never the .ini files that make them a snapshot.
set -eu
dir=$1
order() {
	[ -f "$dir/snapshot.ini" ] && echo "$dir/snapshot.ini"
	find "$dir" -maxdepth 1 -type f -name '*.ini' ! -name snapshot.ini | LC_ALL=C sort
	find "$dir" -maxdepth 1 -type f ! -name '*.ini' -printf '%s %p\n' | LC_ALL=C sort -n | cut -d' ' -f2-
}
order | while IFS= read -r f; do
	n=$(stat -c %s "$f")
	printf '%s\0' "${f##*/}"
	printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((n & 255)) $((n >> 8 & 255)) $((n >> 16 & 255)) $((n >> 24 & 255)))"
	cat "$f"
done
