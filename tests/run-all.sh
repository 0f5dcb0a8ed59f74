#!/usr/bin/env bash
# Runs every test suite and prints one closing line "N passed, N failed, N skipped".
#   tests/run-all.sh            unit suites (build/tests/test_*) and tests/cli/*.sh
#   tests/run-all.sh hw         tests/hw/*.sh (they skip without trace hardware)
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
else
	for s in "$B"/tests/test_*; do [ -x "$s" ] && suites+=("$s"); done
	for s in tests/cli/*.sh; do [ -e "$s" ] && [ "${s##*/}" != lib.sh ] && suites+=("$s"); done
	for s in tests/hw/*.sh; do [ -e "$s" ] && suites+=("$s"); done
fi

total_p=0 total_f=0 total_s=0
failed_suites=()
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
	line=$(grep -a '^# counts: ' "$log" | tail -n 1)
	if [ -n "$line" ]; then
		read -r _ _ p f sk <<<"$line"
	else
		p=0 f=0 sk=0
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "   suite $name exited with status $rc"
		f=1
	fi
	total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + sk))
	[ "$f" -ne 0 ] && failed_suites+=("$name")
	echo "   $name: $p passed, $f failed, $sk skipped ($(( $(date +%s) - start ))s)"
done
if [ "${#failed_suites[@]}" -ne 0 ]; then
	echo "failing suites: ${failed_suites[*]}"
fi
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" -eq 0 ]
