#!/usr/bin/env bash
# Decode benchmark: ptdump --call-trace on a large software-tracer recording.
# Not part of make check.
#   bench/decode.sh [SIZE] [DIR]
# SIZE is the argument of tests/progs/loop (thousands of outer iterations;
# default 3500, which with noretcomp gives about 110 MB of Intel PT). DIR
# holds the trace file while the benchmark runs (default: a new directory in
# /tmp; about 15 MB). B names the build directory (default build; run
# 'make B=... tests' first).
#
# Prints, for --call-trace (and, to separate decoding from formatting, for
# --stats, which decodes everything and prints only counts): wall time, MB of
# PT per second, million instructions per second (instructions from
# --stats), CPU time and peak resident memory (from /usr/bin/time -v when
# installed, else getrusage of the children through bash's times).
# Then the same trace exported with ptdump --to-perf-data and decoded by
# perf's own decoder (perf script --call-trace), in the same run, and the
# ratio of the two.
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
case $B in /*) BD=$B ;; *) BD=$PWD/$B ;; esac
SIZE=${1:-3500}
PTREC=$BD/ptrec
PTDUMP=$BD/ptdump
LOOP=$BD/progs/loop
export PTREC_PLUGIN=${PTREC_PLUGIN:-$BD/ptrec-emu.so}
for f in "$PTREC" "$PTDUMP" "$PTREC_PLUGIN" "$LOOP"; do
	if [ ! -e "$f" ]; then
		echo "missing $f: run 'make B=$B tests' first" >&2
		exit 2
	fi
done
command -v qemu-x86_64 >/dev/null || { echo "qemu-x86_64 not found: apt-get install qemu-user" >&2; exit 2; }
if [ -n "${2:-}" ]; then
	DIR=$2
	mkdir -p "$DIR" || exit 2
else
	DIR=$(mktemp -d /tmp/ptrec-bench.XXXXXX) || exit 2
	trap 'rm -rf "$DIR"' EXIT
fi
TIME=
[ -x /usr/bin/time ] && TIME=/usr/bin/time

now() { date +%s%N; }

echo "machine: $(nproc) CPUs, $(uname -r); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== recording: ptrec record --emulate -e intel_pt/noretcomp/u -- loop $SIZE"
t0=$(now)
"$PTREC" record --emulate -q -e intel_pt/noretcomp/u -o "$DIR/bench.data" -- "$LOOP" "$SIZE" >/dev/null ||
	{ echo "recording failed" >&2; exit 1; }
t1=$(now)
stats=$("$PTDUMP" --stats "$DIR/bench.data")
bytes=$(sed -n 's/^total: [0-9]* streams*, \([0-9]*\) bytes$/\1/p' <<<"$stats")
insns=$(sed -n 's/^instructions: \([0-9]*\)$/\1/p' <<<"$stats")
errors=$(sed -n 's/^errors: \([0-9]*\)$/\1/p' <<<"$stats")
if [ -z "$bytes" ] || [ -z "$insns" ]; then
	echo "cannot read ptdump --stats:" >&2
	echo "$stats" >&2
	exit 1
fi
awk -v b="$bytes" -v i="$insns" -v s="$(( (t1 - t0) / 1000000 ))" -v f="$(stat -c %s "$DIR/bench.data")" 'BEGIN {
	printf "trace: %.1f MB of PT (%d bytes), %.1f million instructions, %.2f bytes/insn; file %.1f MB; recorded in %.1f s\n",
		b / 1e6, b, i / 1e6, b / i, f / 1e6, s / 1000 }'
[ "$bytes" -lt 100000000 ] && echo "note: under 100 MB of PT; use a larger SIZE for the reference figures"
[ "${errors:-0}" != 0 ] && echo "note: the decode reported $errors errors"

# run LABEL CMD...: one timed decode of the whole file, output to /dev/null.
run() {
	local view=$1 t0 t1 wall rss cpu
	shift
	if [ -n "$TIME" ]; then
		t0=$(now)
		"$TIME" -v -o "$DIR/time.txt" "$@" >/dev/null 2>"$DIR/err.txt"
		t1=$(now)
		rss=$(sed -n 's/.*Maximum resident set size (kbytes): \([0-9]*\)/\1/p' "$DIR/time.txt")
		cpu=$(awk -F': ' '/User time|System time/ { s += $2 } END { printf "%.2f", s }' "$DIR/time.txt")
	else
		t0=$(now)
		"$@" >/dev/null 2>"$DIR/err.txt"
		t1=$(now)
		rss=
		cpu=$(times | tail -n 1 | awk '{ print $1 " user " $2 " sys" }')
	fi
	wall=$(( (t1 - t0) / 1000000 ))
	eval "wall_${view//[^a-z]/_}=$wall"
	awk -v v="$view" -v b="$bytes" -v i="$insns" -v ms="$wall" -v rss="$rss" -v cpu="$cpu" 'BEGIN {
		s = ms / 1000
		printf "%-14s wall %7.2f s  %6.2f MB PT/s  %6.2f Minsn/s  CPU %s s (%s MB PT per CPU-s)  peak RSS %s\n",
			v, s, b / 1e6 / s, i / 1e6 / s, cpu, (cpu + 0 > 0) ? sprintf("%.2f", b / 1e6 / cpu) : "n/a",
			(rss != "") ? sprintf("%.1f MB", rss / 1024) : "n/a" }'
	[ -s "$DIR/err.txt" ] && sed 's/^/    stderr: /' "$DIR/err.txt" | head -n 3
	return 0
}

echo "== decoding (output to /dev/null)"
run --call-trace "$PTDUMP" --call-trace "$DIR/bench.data"
run --stats "$PTDUMP" --stats "$DIR/bench.data"
if command -v perf >/dev/null; then
	echo "== the same trace through perf's own decoder"
	if "$PTDUMP" -q --to-perf-data "$DIR/bench.perf" "$DIR/bench.data"; then
		run perf-call-trace perf script -i "$DIR/bench.perf" --symfs "$DIR/bench.perf.debug" --call-trace
		# shellcheck disable=SC2154
		awk -v p="$wall_perf_call_trace" -v q="$wall___call_trace" 'BEGIN {
			if (q > 0) printf "ratio: perf script --call-trace takes %.2fx the wall time of ptdump --call-trace\n", p / q }'
	else
		echo "export failed"
	fi
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "MB PT/s: Intel PT bytes decoded per wall-clock second; Minsn/s: instructions"
echo "(from --stats) per wall-clock second; per CPU-s: the same per second of CPU"
echo "time (user + system), which other load on the machine disturbs less."
echo "--stats decodes the same trace but prints only counts, so the difference to"
echo "--call-trace is the formatting."
echo "perf-call-trace: perf script --call-trace on the exported perf.data (perf's"
echo "own Intel PT decoder), the same trace in the same run."
