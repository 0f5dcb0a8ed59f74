#!/usr/bin/env bash
# Runs the libFuzzer builds of the fuzz targets (make fuzz-smoke, make fuzz).
#   tests/fuzz/run.sh smoke SECONDS          every target for SECONDS each
#   tests/fuzz/run.sh long SECONDS [TARGET]  one target (or all) for longer,
#                                            corpus kept in $B/corpus/TARGET
# B names the build directory (build/fuzz). Each run starts from the checked-in
# seed corpus (tests/fuzz/corpus/TARGET) and the regression inputs
# (tests/fuzz/regress/TARGET), with the limits that make a blow-up a finding:
# 1 GiB per allocation, 2 GiB resident, 10 s per input, and the output bound
# of tests/fuzz/fuzz.h. A finding is saved in $B/findings/TARGET/.
# Prints one line per target and "N passed, N failed".
#
# Leaks: OpenCSD 1.3.3 leaks on its own: an object per decode tree, which
# decoders/coresight.c keeps from LeakSanitizer, and elements its decoder
# drops (tests/lsan.supp; fuzz_cstrace met a few in a million inputs). Their
# stacks go through libstdc++, which has no frame pointers, so only slow
# unwinding of every malloc tells them apart, at a third of the speed or
# less: the targets that run OpenCSD on every input (OPENCSD_TARGETS) unwind
# slowly. (fuzz_tracefile and fuzz_perfdata reach OpenCSD with some inputs:
# a leak they report from operator new alone is to be replayed with
# fast_unwind_on_malloc=0 before it counts as ours.) Every input of those
# targets also ends with more allocations than frees (the per-tree object),
# on which libFuzzer would run it again with a whole-heap leak scan, several
# times the cost, and give that up after 1000 inputs anyway; so they are
# checked for leaks over the whole run, at its end (a leak fails the run
# with its allocation stack, the input not named). The other targets are
# checked after every input that allocates more than it frees.
set -u
cd "$(dirname "$0")/../.."
[ -n "${ASAN_OPTIONS:-}" ] && ASAN_OPTIONS_SET=1
B=${B:-build/fuzz}
mode=${1:-smoke}
secs=${2:-60}
only=${3:-}
export PTREC_SYSROOT=$PWD/$B/sysroot
if [ ! -d "$PTREC_SYSROOT/sys" ]; then
	PTREC=$B/ptrec tests/fixtures/mksysroot.sh "$PTREC_SYSROOT" >/dev/null || { echo "cannot build the fixture sysroot"; exit 1; }
fi
OPENCSD_TARGETS=" fuzz_cstrace fuzz_snapshot "
asan_opts=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
passed=0 failed=0
for bin in "$B"/fuzz/fuzz_*; do
	[ -x "$bin" ] || continue
	name=${bin##*/}
	[ -n "$only" ] && [ "$only" != "$name" ] && continue
	if [ "$mode" = long ]; then
		work=$B/corpus/$name
	else
		work=$(mktemp -d "/tmp/ptrec-fuzz-$name.XXXXXX")
	fi
	mkdir -p "$work" "$B/findings/$name"
	seeds=()
	for d in tests/fuzz/corpus/$name tests/fuzz/regress/$name; do
		[ -d "$d" ] && seeds+=("$d")
	done
	log=$B/findings/$name.log
	export ASAN_OPTIONS=$asan_opts
	leaks=()
	if [ -z "${ASAN_OPTIONS_SET:-}" ]; then
		if [[ $OPENCSD_TARGETS == *" $name "* ]]; then
			ASAN_OPTIONS=$asan_opts:fast_unwind_on_malloc=0
			leaks=(-detect_leaks=0)
		fi
	fi
	"$bin" "${leaks[@]}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
		-max_len=262144 -print_final_stats=1 -artifact_prefix="$B/findings/$name/" \
		"$work" "${seeds[@]}" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1))
		echo "ok     $name: ${runs:-?} runs in ${secs}s, ${cov:-cov: ?}"
	else
		failed=$((failed + 1))
		echo "FAIL   $name (exit $rc): finding in $B/findings/$name/, log $log"
		grep -E '^==[0-9]+==ERROR|^SUMMARY|runtime error|deadly signal|out-of-memory|timeout' "$log" | head -n 5 | sed 's/^/    /'
	fi
	[ "$mode" = long ] || rm -rf "$work"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
