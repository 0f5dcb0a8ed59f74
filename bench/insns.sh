#!/usr/bin/env bash
# Decode cost in instructions executed: ptdump's views against the bare
# libipt loop (bench/ipt_floor) and against perf script, each run once under
# valgrind's callgrind, which counts the instructions a program executes
# (Ir). Unlike CPU time the count does not move with the machine's load, so
# a ratio from one run holds. Not part of make check.
#   bench/insns.sh [SIZE] [DIR]
# The trace is the software tracer's recording of tests/progs/loop SIZE
# (default 100: about 8 M instructions, 3 MB of Intel PT without return
# compression). DIR holds the files while it runs (default: a new directory
# in /tmp). B names the build directory (default build; run
# 'make B=... tests bench' first).
# Environment:
#   VIEWS   the ptdump views counted (default: --stats --call-trace)
#   PERF    0: leave perf script out (it takes the longest under callgrind)
# Each row: the instructions executed, and their ratio to the floor's (the
# floor runs over the raw export of the same stream and images with
# ptdump's block-decoder configuration).
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
case $B in /*) BD=$B ;; *) BD=$PWD/$B ;; esac
SIZE=${1:-100}
VIEWS=${VIEWS:---stats --call-trace}
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
DIR=${2:-$(mktemp -d /tmp/ptrec-insns-bench.XXXXXX)}
mkdir -p "$DIR"
cd "$DIR" || exit 2

# irefs CMD...: runs CMD under callgrind (output to /dev/null); prints the
# instructions it executed.
irefs() {
	valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" >/dev/null 2>cg.err
	sed -n 's/.*Collected : \([0-9]*\)$/\1/p' cg.err | tail -n 1
}

"$PTREC" record --emulate -q -e 'intel_pt/noretcomp/u' -o t.data -- "$BD/progs/loop" "$SIZE" \
	>/dev/null || exit 1
rm -rf raw
"$PTDUMP" -q --to-raw raw t.data || exit 1
args=$(ls raw/*.ptxed.args | head -n 1)
floor=$(cd raw && irefs "$FLOOR" --ptdump-config 1 $(cat "$(basename "$args")"))
insns=$("$PTDUMP" --stats t.data | sed -n 's/^instructions: //p')
printf 'loop %s: %s instructions traced, %s bytes of Intel PT\n' "$SIZE" "$insns" \
	"$(stat -c %s raw/*.pt | head -n 1)"
printf '%-32s %15s %8s\n' what instructions ratio
printf '%-32s %15s %8s\n' "libipt floor" "$floor" 1.00
ratio() { awk -v a="$1" -v b="$floor" 'BEGIN { printf "%.2f", a / b }'; }
for v in $VIEWS; do
	n=$(irefs "$PTDUMP" -j1 "$v" t.data)
	printf '%-32s %15s %8s\n' "ptdump -j1 $v" "$n" "$(ratio "$n")"
done
if [ "${PERF:-1}" != 0 ] && command -v perf >/dev/null &&
	"$PTDUMP" -q --to-perf-data t.perf t.data; then
	n=$(irefs perf script -i t.perf --symfs t.perf.debug --call-trace)
	printf '%-32s %15s %8s\n' "perf script --call-trace" "$n" "$(ratio "$n")"
fi
[ -n "${2:-}" ] || rm -rf "$DIR"
