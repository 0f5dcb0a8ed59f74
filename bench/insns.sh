#!/usr/bin/env bash
# Decode cost in instructions executed: ptdump's views against the bare
# libipt loop (bench/ipt_floor) and against perf script, each run once under
# valgrind's callgrind, which counts the instructions a program executes
# (Ir). Unlike CPU time the count does not move with the machine's load, so
# a ratio from one run holds. Not part of make check.
#   bench/insns.sh [SIZE] [DIR]
# The traces are the software tracer's recordings, without return
# compression, of each workload: loop is tests/progs/loop SIZE (default
# 100: about 8 M instructions, 3 MB of Intel PT), gzip is gzip -9 of
# SIZE * 2 KB of text (about 40 M instructions at 100), python is python3
# running a short script whose size follows SIZE. DIR holds the files
# while it runs (default: a new directory in /tmp). B names the build
# directory (default build; run 'make B=... tests bench' first).
# Environment:
#   WORKLOADS  which recordings (default: loop gzip python)
#   VIEWS      the ptdump views counted (default: --stats --call-trace)
#   PERF       0: leave perf script out (it takes the longest under callgrind)
# Each row: the instructions executed, and their ratio to the floor's (the
# floor runs over the raw export of each stream with its images and
# ptdump's block-decoder configuration; a trace's floor is their sum).
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
case $B in /*) BD=$B ;; *) BD=$PWD/$B ;; esac
SIZE=${1:-100}
VIEWS=${VIEWS:---stats --call-trace}
WORKLOADS=${WORKLOADS:-loop gzip python}
PTREC=$BD/ptrec
PTDUMP=$BD/ptdump
FLOOR=$BD/bench/ipt_floor
export PTREC_PLUGIN=${PTREC_PLUGIN:-$BD/ptrec-emu.so}
for f in "$PTREC" "$PTDUMP" "$FLOOR" "$PTREC_PLUGIN" "$BD/progs/loop"; do
	if [ ! -e "$f" ]; then
		echo "missing $f: run 'make B=$B tests bench' first" >&2
		exit 2
	fi
done
if ! command -v valgrind >/dev/null; then
	echo "valgrind is not installed (Debian: valgrind)" >&2
	exit 2
fi
case $SIZE in '' | *[!0-9]*) echo "SIZE must be a number: $SIZE" >&2; exit 2 ;; esac
DIR=${2:-$(mktemp -d /tmp/ptrec-insns-bench.XXXXXX)}
mkdir -p "$DIR"
cd "$DIR" || exit 2

# irefs CMD...: runs CMD under callgrind (output to /dev/null); prints the
# instructions it executed.
irefs() {
	valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" >/dev/null 2>cg.err
	sed -n 's/.*Collected : \([0-9]*\)$/\1/p' cg.err | tail -n 1
}

# record NAME CMD...: the trace of CMD in NAME.data.
record() {
	local n=$1
	shift
	"$PTREC" record --emulate -q -e 'intel_pt/noretcomp/u' -o "$n.data" -- "$@" >/dev/null
}

# bench NAME: the rows of NAME.data.
bench() {
	local n=$1 floor=0 args v c
	rm -rf raw
	"$PTDUMP" -q --to-raw raw "$n.data" || return 1
	for args in raw/*.ptxed.args; do
		c=$(cd raw && irefs "$FLOOR" --ptdump-config 1 $(cat "$(basename "$args")"))
		floor=$((floor + ${c:-0}))
	done
	printf '%s: %s instructions traced, %s bytes of Intel PT in %s streams\n' "$n" \
		"$("$PTDUMP" --stats "$n.data" | sed -n 's/^instructions: //p')" \
		"$(cat raw/*.pt | wc -c)" "$(ls raw/*.pt | wc -l)"
	printf '%-32s %15s %8s\n' what instructions ratio
	printf '%-32s %15s %8s\n' "libipt floor" "$floor" 1.00
	for v in $VIEWS; do
		c=$(irefs "$PTDUMP" -j1 "$v" "$n.data")
		printf '%-32s %15s %8s\n' "ptdump -j1 $v" "$c" \
			"$(awk -v a="$c" -v b="$floor" 'BEGIN { printf "%.2f", a / b }')"
	done
	if [ "${PERF:-1}" != 0 ] && command -v perf >/dev/null &&
		"$PTDUMP" -q --to-perf-data "$n.perf" "$n.data"; then
		c=$(irefs perf script -i "$n.perf" --symfs "$n.perf.debug" --call-trace)
		printf '%-32s %15s %8s\n' "perf script --call-trace" "$c" \
			"$(awk -v a="$c" -v b="$floor" 'BEGIN { printf "%.2f", a / b }')"
	fi
	echo
}

for w in $WORKLOADS; do
	case $w in
	loop) record loop "$BD/progs/loop" "$SIZE" ;;
	gzip)
		seq 1 100000000 | head -c $((SIZE * 2000)) >gzip.in
		record gzip /bin/gzip -9 -c gzip.in ;;
	python)
		record python /usr/bin/python3 -S -c \
			"import json; d = {str(i): [i] * 8 for i in range($SIZE * 10)}; print(len(json.dumps(sorted(d.items()))))" ;;
	*) echo "unknown workload $w" >&2; continue ;;
	esac || { echo "$w: the recording failed" >&2; continue; }
	bench "$w" || echo "$w: --to-raw failed" >&2
done
[ -n "${2:-}" ] || rm -rf "$DIR"
