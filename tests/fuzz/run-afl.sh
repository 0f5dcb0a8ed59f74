#!/usr/bin/env bash
# Runs the afl++ builds of the fuzz targets (make fuzz-afl).
#   tests/fuzz/run-afl.sh SECONDS [TARGET]   every target (or one) for SECONDS
# B names the build directory (build/afl). Each target starts from its
# checked-in seed corpus and regression inputs; afl-fuzz keeps its queue and
# findings in $B/out/TARGET/default/ (a later run of the same target goes on
# from its queue). Limits as in run.sh: 10 s per input, the sink's output
# bound (tests/fuzz/fuzz.h); ASan reports end an input as a crash. Leaks are
# left to the libFuzzer runs (make fuzz-smoke), which check them.
# Prints one line per target and "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
B=${B:-build/afl}
secs=${1:-60}
only=${2:-}
command -v afl-fuzz >/dev/null || { echo "afl-fuzz is missing (make deps installs afl++)"; exit 1; }
export PTREC_SYSROOT=$PWD/$B/sysroot
if [ ! -d "$PTREC_SYSROOT/sys" ]; then
	PTREC=$B/ptrec tests/fixtures/mksysroot.sh "$PTREC_SYSROOT" >/dev/null || { echo "cannot build the fixture sysroot"; exit 1; }
fi
export AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_NO_AFFINITY=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
export AFL_SKIP_CRASHES=1
export ASAN_OPTIONS=abort_on_error=1:symbolize=0:detect_leaks=0:allocator_may_return_null=1:malloc_limit_mb=1024
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1
passed=0 failed=0
for bin in "$B"/fuzz/fuzz_*; do
	[ -x "$bin" ] || continue
	name=${bin##*/}
	[ -n "$only" ] && [ "$only" != "$name" ] && continue
	out=$B/out/$name
	seeds=$B/seeds/$name
	rm -rf "$seeds" && mkdir -p "$seeds" "$out"
	for d in tests/fuzz/corpus/$name tests/fuzz/regress/$name; do
		[ -d "$d" ] && find "$d" -maxdepth 1 -type f -size -1024k -exec cp {} "$seeds/" \;
	done
	in=$seeds
	[ -s "$out/default/fuzzer_stats" ] && in=- # go on from the queue
	log=$out.log
	afl-fuzz -i "$in" -o "$out" -V "$secs" -t 10000 -m none -- "$bin" >"$log" 2>&1
	rc=$?
	stats=$out/default/fuzzer_stats
	execs=$(sed -n 's/^execs_done *: *//p' "$stats" 2>/dev/null)
	crashes=$(sed -n 's/^saved_crashes *: *//p' "$stats" 2>/dev/null)
	hangs=$(sed -n 's/^saved_hangs *: *//p' "$stats" 2>/dev/null)
	edges=$(sed -n 's/^edges_found *: *//p' "$stats" 2>/dev/null)
	if [ "$rc" -eq 0 ] && [ "${execs:-0}" -gt 0 ] && [ "${crashes:-x}" = 0 ] && [ "${hangs:-x}" = 0 ]; then
		passed=$((passed + 1))
		echo "ok     $name (afl++): $execs runs in ${secs}s, $edges edges"
	else
		failed=$((failed + 1))
		echo "FAIL   $name (afl++, exit $rc): ${execs:-0} runs, ${crashes:-?} crashes, ${hangs:-?} hangs: $out/default/, log $log"
		grep -E 'PROGRAM ABORT|ERROR|Location' "$log" | head -n 3 | sed 's/^/    /'
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
