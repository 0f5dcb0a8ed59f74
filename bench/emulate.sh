#!/usr/bin/env bash
# Benchmark of the software tracer (ptrec record --emulate): emulated
# recording speed in instructions per second and PT bytes per instruction,
# next to plain qemu-x86_64 without the plugin, for the test programs.
#   bench/emulate.sh [SIZE]     (B= build directory, default build; make bench tests first)
# SIZE scales the long-running workload (default 3000: about 250 million
# instructions for progs/loop).
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
SIZE=${1:-3000}
PLUGIN=${PTREC_PLUGIN:-$B/ptrec-emu.so}
BENCH=$B/bench/emulate_bench
for f in "$PLUGIN" "$BENCH" "$B/progs/loop" "$B/progs/calls"; do
	if [ ! -e "$f" ]; then
		echo "missing $f: run 'make B=$B bench tests' first" >&2
		exit 2
	fi
done
command -v qemu-x86_64 >/dev/null || { echo "qemu-x86_64 not found: apt-get install qemu-user" >&2; exit 2; }

now() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }

printf '%-22s %-12s %12s %9s %10s %10s %9s %9s\n' workload config insns pt_bytes B/insn Minsn/s seconds qemu_s
run() {
	local name=$1 conf=$2
	shift 2
	local t0 t1 q0 q1 out insns pt s
	q0=$(now)
	qemu-x86_64 "$@" >/dev/null 2>&1
	q1=$(now)
	t0=$(now)
	# shellcheck disable=SC2086
	out=$("$BENCH" "$PLUGIN" $conf -- "$@" 2>/dev/null | tail -n 1)
	t1=$(now)
	insns=$(sed -n 's/.*insns=\([0-9]*\).*/\1/p' <<<"$out")
	pt=$(sed -n 's/.*pt_bytes=\([0-9]*\).*/\1/p' <<<"$out")
	s=$(secs "$t0" "$t1")
	if [ -z "$insns" ] || [ "$insns" = 0 ]; then
		echo "$name: no result ($out)" >&2
		return
	fi
	awk -v n="$name" -v c="${conf:-branches}" -v i="$insns" -v p="$pt" -v s="$s" -v q="$(secs "$q0" "$q1")" \
		'BEGIN { printf "%-22s %-12s %12d %9d %10.4f %10.1f %9.3f %9.3f\n", n, c, i, p, p / i, i / s / 1e6, s, q }'
}

run "loop $SIZE" "" "$B/progs/loop" "$SIZE"
run "loop $SIZE" "tsc mtc cyc" "$B/progs/loop" "$SIZE"
run "loop $SIZE" "noretcomp" "$B/progs/loop" "$SIZE"
run "calls $((SIZE * 10))" "" "$B/progs/calls" "$((SIZE * 10))"
run "threads $((SIZE * 100))" "" "$B/progs/threads" "$((SIZE * 100))"
echo "Minsn/s: emulated instructions per wall-clock second with the tracer;"
echo "qemu_s: the same workload under plain qemu-x86_64, no plugin."
