#!/usr/bin/env bash
# Drain benchmark: AUX ring -> trace file (zstd levels, sync and async) against a
# plain write(2) copy of the same bytes, all in one run. Not part of make check.
#   bench/drain.sh [drain options]      e.g. --size 1024 --dir /var/tmp
# B names the build directory (default build). Prints MB/s and the ratio to the copy.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
make -s B="$B" "$B/bench/drain"
echo "machine: $(nproc) CPUs, $(uname -r)"
"$B/bench/drain" "$@"
echo
echo "vs copy > 1: faster than copying the raw bytes (compression writes less);"
echo "the file system under --dir decides what a write costs (page cache here)."
