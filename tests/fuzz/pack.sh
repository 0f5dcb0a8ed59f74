#!/usr/bin/env bash
# Packs the files of a directory into one fuzz_snapshot input (see
# fuzz_snapshot.c): NAME '\0' LENGTH (4 bytes, little endian) BYTES, repeated.
#   tests/fuzz/pack.sh DIR > OUT
set -eu
dir=$1
for f in "$dir"/*; do
	[ -f "$f" ] || continue
	n=$(stat -c %s "$f")
	printf '%s\0' "${f##*/}"
	printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((n & 255)) $((n >> 8 & 255)) $((n >> 16 & 255)) $((n >> 24 & 255)))"
	cat "$f"
done
