#!/usr/bin/env bash
# Runs every test suite and prints one closing line "N passed, N failed, N skipped".
#   tests/run-all.sh            unit suites (build/tests/test_*) and tests/cli/*.sh
#   tests/run-all.sh hw         tests/hw/*.sh (they skip without trace hardware)
#   tests/run-all.sh system     tests/system/*.sh (the whole-system software tracer;
#                               each recording boots a guest under qemu-system)
# B names the build directory (build, or build/san for SANITIZE=1).
# Each suite ends with "# counts: PASSED FAILED SKIPPED"; a suite that exits
# non-zero without that line counts as one failure.
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
export B
export PTREC=${PTREC:-$PWD/$B/ptrec}
export PTDUMP=${PTDUMP:-$PWD/$B/ptdump}
export PTREC_PLUGIN=${PTREC_PLUGIN:-$PWD/$B/ptrec-emu.so}
export PTREC_TOP=$PWD
# Sanitizer runs: fail on any report; leak checking is on.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=66}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=67}

mode=${1:-all}
suites=()
if [ "$mode" = hw ]; then
	for s in tests/hw/*.sh; do [ -e "$s" ] && suites+=("$s"); done
elif [ "$mode" = system ]; then
	for s in tests/system/*.sh; do [ -e "$s" ] && suites+=("$s"); done
else
	for s in "$B"/tests/test_*; do [ -x "$s" ] && suites+=("$s"); done
	for s in tests/cli/*.sh; do [ -e "$s" ] && [ "${s##*/}" != lib.sh ] && suites+=("$s"); done
	for s in tests/hw/*.sh; do [ -e "$s" ] && suites+=("$s"); done
fi

. tests/tally.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for s in "${suites[@]}"; do
	name=${s##*/}
	echo "== $name"
	start=$(date +%s)
	if [[ $s == *.sh ]]; then
		bash "$s" >"$log" 2>&1
	else
		"$s" >"$log" 2>&1
	fi
	rc=$?
	cat "$log"
	tally "$name" "$rc" "$log" "$(( $(date +%s) - start ))"
done
tally_end
