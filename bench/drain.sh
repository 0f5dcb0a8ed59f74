#!/usr/bin/env bash
# Drain benchmark: AUX ring -> trace file (zstd levels, sync and async) against a
# plain write(2) copy of the same bytes, all in one run. Not part of make check.
#   bench/drain.sh [drain options]      e.g. --size 1024 --dir /var/tmp --data noisy
# B names the build directory (default build). Prints MB/s, the ratio to the
# copy, the file size, the compression ratio and the CPU seconds of each mode.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
make -s B="$B" "$B/bench/drain"
echo "machine: $(nproc) CPUs, $(uname -r); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$B/bench/drain" "$@"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "vs copy: throughput relative to the plain copy in the same run (> 1 is faster)."
echo "CPU s: process CPU time of the run, the producer thread's copying included."
echo "The file system under --dir decides what a write costs (page cache for /tmp)."
echo "model rows: the same bytes through the kernel model (ptrec record --emulate's kernel):"
echo "its AUX output path writes them, one PERF_RECORD_AUX per piece, and the recorder's"
echo "ring code reads them from the mapping made through the kernel seam."
