#!/usr/bin/env bash
# --follow benchmark: the CPU time of ptdump --follow over a recording that
# grows while it runs, against that of one decode of the finished file. Not
# part of make check.
#   bench/follow.sh [STAGES] [CALLS] [DIR]
# The workload is tests/progs/stages: a stage of CALLS calls (default
# 50000), then one more for each line written to its input, STAGES lines
# (default 40) PACE seconds apart (default 0.5), so the recording grows for
# about STAGES * PACE seconds. DIR holds the trace file while the benchmark
# runs (default: a new directory in /tmp). B names the build directory
# (default build; run 'make B=... tests' first).
# Environment:
#   VIEWS   the views followed, one after the other (default --call-trace)
#   PTDUMP  the ptdump that follows (default B's; another build compares)
# For each view: the CPU time (user + system) of --follow, which ends with
# a last round after the recording (or, where its rounds decode from the
# beginning, a decode of the whole file checked against what they wrote),
# that of a plain decode of the finished file, their ratio, the share of
# the output that --follow had written when the recording ended (the rest
# is the lag), the seconds from the recording's end to ptdump's, the rounds
# and what share of the trace bytes they were given they decoded (-v; "-"
# for a ptdump without these lines). The output goes to a file in DIR,
# removed after each view.
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
case $B in /*) BD=$B ;; *) BD=$PWD/$B ;; esac
STAGES=${1:-40}
CALLS=${2:-50000}
PACE=${PACE:-0.5}
VIEWS=${VIEWS:---call-trace}
PTREC=$BD/ptrec
PTDUMP=${PTDUMP:-$BD/ptdump}
STAGES_BIN=$BD/progs/stages
export PTREC_PLUGIN=${PTREC_PLUGIN:-$BD/ptrec-emu.so}
for f in "$PTREC" "$PTDUMP" "$PTREC_PLUGIN" "$STAGES_BIN"; do
	if [ ! -e "$f" ]; then
		echo "missing $f: run 'make B=$B tests' first" >&2
		exit 2
	fi
done
DIR=${3:-$(mktemp -d /tmp/ptrec-follow-bench.XXXXXX)}
mkdir -p "$DIR"
cd "$DIR" || exit 2

# cpu CMD...: runs CMD (its output to /dev/null); prints its CPU seconds.
cpu() {
	/usr/bin/time -f '%U %S' -o cpu.t "$@" >/dev/null 2>>cpu.err
	awk '{ printf "%.2f\n", $1 + $2 }' cpu.t
}

printf '%-16s %10s %10s %7s %9s %7s %7s %9s %s\n' view follow-cpu-s plain-cpu-s ratio streamed \
	after-s rounds decoded trace
for v in $VIEWS; do
	rm -f f.data ctl
	mkfifo ctl
	exec 3<>ctl
	"$PTREC" record --emulate -q -o f.data -- "$STAGES_BIN" "$CALLS" <ctl >/dev/null 2>rec.err 3>&- &
	rec=$!
	for i in $(seq 300); do [ -s f.data ] && break; sleep 0.1; done
	( /usr/bin/time -f '%U %S' -o follow.t "$PTDUMP" --follow -v "$v" f.data \
		>follow.out 2>follow.err 3>&- ) &
	dump=$!
	for i in $(seq "$STAGES"); do
		sleep "$PACE"
		echo >&3
	done
	exec 3>&-
	wait "$rec"
	atend=$(stat -c %s follow.out)
	t0=$(date +%s.%N)
	wait "$dump"
	after=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	total=$(stat -c %s follow.out)
	rm -f follow.out
	fcpu=$(awk '{ printf "%.2f\n", $1 + $2 }' follow.t)
	pcpu=$(cpu "$PTDUMP" "$v" f.data)
	rounds=$(grep -c '^ptdump: --follow: round' follow.err)
	[ "$rounds" = 0 ] && rounds=-
	share=$(awk '/^ptdump: --follow: round/ { d += $6; t += $8 }
		END { if (t) printf "%.1f%%\n", 100 * d / t; else print "-" }' follow.err)
	size=$(stat -c %s f.data)
	printf '%-16s %10s %10s %7s %9s %7s %7s %9s %s\n' "$v" "$fcpu" "$pcpu" \
		"$(awk -v a="$fcpu" -v b="$pcpu" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')" \
		"$(awk -v a="$atend" -v b="$total" 'BEGIN { printf "%.1f%%", (b > 0 ? 100 * a / b : 0) }')" \
		"$after" "$rounds" "$share" "$((size >> 10)) KiB file"
	grep -v '^ptdump: --follow: round' follow.err >&2
done
[ -n "${3:-}" ] || rm -rf "$DIR"
