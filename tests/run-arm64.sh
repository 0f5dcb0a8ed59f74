#!/usr/bin/env bash
# Runs the arm64 unit tests (make cross-arm64 builds them into $B, default
# build/arm64) under qemu-aarch64 and prints one closing line
# "N passed, N failed, N skipped". Suites that include <intel-pt.h> are not
# built without libipt (Debian has no arm64 libipt); each counts as skipped.
# The suites find ptrec (for the fixture trees) and nm (for symbol addresses)
# through wrappers that run the arm64 ptrec under qemu and read aarch64 ELF.
# Then the arm64 ptdump decodes traces recorded by the native build
# (NATIVE_B, default build), when that is there.
set -u
cd "$(dirname "$0")/.."
B=${B:-build/arm64}
QEMU=${QEMU_AARCH64:-qemu-aarch64}
# The arm64 C library and libraries come from the multiarch packages; the
# loader is /lib/ld-linux-aarch64.so.1, which finds them in /usr/lib/aarch64-linux-gnu.
export QEMU_LD_PREFIX=${QEMU_LD_PREFIX:-/}

if ! command -v "$QEMU" >/dev/null; then
	echo "run-arm64: $QEMU not found (Debian package qemu-user)" >&2
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
wrap=$(mktemp -d)
trap 'rm -rf "$wrap"' EXIT
printf '#!/bin/sh\nexec %s %s "$@"\n' "$QEMU" "$PWD/$B/ptrec" >"$wrap/ptrec"
printf '#!/bin/sh\nexec aarch64-linux-gnu-nm "$@"\n' >"$wrap/nm"
chmod +x "$wrap/ptrec" "$wrap/nm"
export PATH="$wrap:$PATH" PTREC="$wrap/ptrec" PTREC_TOP=$PWD

# The arm64 ptdump on traces the native ptrec records with the software
# tracers: a CoreSight trace of an aarch64 program decodes to the executed
# ranges of the tracer's ground truth and to the native ptdump's call trace;
# an Intel PT trace is refused with the reason (no libipt on arm64).
native=${NATIVE_B:-build}
e2e() {
	local tmp=$wrap/e2e prog=$native/progs-arm64/calls out
	local p=0 f=0
	ok() { echo "ok     $1"; p=$((p + 1)); }
	bad() { echo "FAIL   $1"; f=$((f + 1)); }
	if [ ! -x "$native/ptrec" ] || [ ! -x "$prog" ] || [ ! -x "$native/progs/calls" ] ||
	   [ ! -e "$native/ptrec-emu-etm.so" ] || [ ! -e "$native/ptrec-emu.so" ]; then
		echo "skip   e2e: the native build ($native: ptrec, plugins, test programs) is missing"
		echo "# counts: 0 0 1"
		return
	fi
	mkdir -p "$tmp"
	if PTREC_PLUGIN="$native/ptrec-emu.so" "$native/ptrec" record --emulate -q -o "$tmp/cs.data" \
		--emulate-truth "$tmp/cs.truth" -- "$prog" >/dev/null 2>&1; then
		ok "record an aarch64 program (native ptrec, CoreSight tracer)"
	else
		bad "record an aarch64 program (native ptrec, CoreSight tracer)"
	fi
	runs() { awk '{ if ($1 == e) { e = $2; next } if (s != "") print s, e; s = $1; e = $2 } END { if (s != "") print s, e }'; }
	out=$("$QEMU" "$B/ptdump" --ranges "$tmp/cs.data" 2>&1) && ok "arm64 ptdump --ranges" ||
		bad "arm64 ptdump --ranges: $out"
	if [ "$(awk '$1 == "R" { on = 1 } $1 == "P" { on = 0 } $1 == "B" && on { print $3, $4 }' "$tmp/cs.truth" | runs | md5sum)" = \
	     "$(sed -n 's/.*exec range=0x\([0-9a-f]*\):\[0x\([0-9a-f]*\)\].*/\1 \2/p' <<<"$out" | runs | md5sum)" ] &&
	   [ -s "$tmp/cs.truth" ]; then
		ok "arm64 ptdump: ranges equal the ground truth"
	else
		bad "arm64 ptdump: ranges differ from the ground truth"
	fi
	if [ "$("$QEMU" "$B/ptdump" --call-trace "$tmp/cs.data" 2>&1 | md5sum)" = \
	     "$("$native/ptdump" --call-trace "$tmp/cs.data" 2>&1 | md5sum)" ]; then
		ok "arm64 ptdump --call-trace equals the native one"
	else
		bad "arm64 ptdump --call-trace differs from the native one"
	fi
	PTREC_PLUGIN="$native/ptrec-emu.so" "$native/ptrec" record --emulate -q -o "$tmp/pt.data" \
		-- "$native/progs/calls" >/dev/null 2>&1
	out=$("$QEMU" "$B/ptdump" --info "$tmp/pt.data" 2>&1) && grep -q 'GenuineIntel' <<<"$out" &&
		ok "arm64 ptdump --info reads an Intel PT file" || bad "arm64 ptdump --info: $out"
	out=$("$QEMU" "$B/ptdump" --call-trace "$tmp/pt.data" 2>&1)
	if [ $? -ne 0 ] && grep -q 'built without libipt' <<<"$out"; then
		ok "arm64 ptdump refuses Intel PT, saying why"
	else
		bad "arm64 ptdump on Intel PT: $out"
	fi
	echo "# counts: $p $f 0"
}
logs=$wrap/logs
mkdir -p "$logs"
# run_suite NAME BIN: one suite under qemu, its output and status kept for the summary.
run_suite() {
	local start=$(date +%s)
	"$QEMU" "$2" >"$logs/$1.log" 2>&1
	echo "$? $(($(date +%s) - start))" >"$logs/$1.rc"
}
# At most JOBS suites at a time (qemu-user is single-threaded per process).
JOBS=${JOBS:-$(nproc)}
throttle() { while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done; }

names=()
for src in tests/unit/test_*.c; do
	name=$(basename "$src" .c)
	names+=("$name")
	bin=$B/tests/$name
	[ -x "$bin" ] || continue
	throttle
	run_suite "$name" "$bin" &
done
throttle
( start=$(date +%s); e2e >"$logs/e2e.log" 2>&1; echo "0 $(($(date +%s) - start))" >"$logs/e2e.rc" ) &
wait

. tests/tally.sh
for name in "${names[@]}" e2e; do
	if [ ! -e "$logs/$name.rc" ]; then
		if grep -q '^#include <intel-pt.h>' "tests/unit/$name.c"; then
			echo "== $name: skipped (needs libipt, which has no arm64 package)"
			total_s=$((total_s + 1))
		else
			echo "== $name: not built (run make cross-arm64)"
			total_f=$((total_f + 1))
			failed_suites+=("$name")
		fi
		continue
	fi
	echo "== $name"
	cat "$logs/$name.log"
	read -r rc secs <"$logs/$name.rc"
	tally "$name" "$rc" "$logs/$name.log" "$secs"
done

tally_end
