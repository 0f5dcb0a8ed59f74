#!/usr/bin/env bash
# -j scaling of every ptdump view, measured so that a noisy machine can be
# read: alternating pairs of -j1 and -jN decodes of one trace, their median
# and least wall times, and beside them what bounds the ratio on this
# machine at this moment. Not part of make check.
#   bench/jscale.sh [TRACE]
# TRACE: a ptrec trace file; without one, python3 building and sorting a
# 20,000-entry dict is recorded with the software tracer (about 61 MB of
# Intel PT without return compression). B names the build directory
# (default build).
# Environment:
#   VIEWS  the views (default: --stats --call-trace --call-ret-trace
#          --branches --folded --report --events)
#   PAIRS  alternating -j1/-jN pairs per view (default 5)
#   JOBS   N (default: the online CPUs)
#
# Printed first, the bounds:
#   ceiling  N copies of `ptdump -j1 --stats` at once against one alone:
#            the speedup the machine itself gives N independent decodes
#            (2.0 on N idle cores; less when the cores share a physical
#            core or another load runs)
#   start    the wall time to ptdump's first output byte with -jN (loading
#            the file, the images and symbols, planning the first parts:
#            work on one thread that -j does not divide)
# Then a row per view: -j1 and -jN wall time (median / least), the ratio of
# the medians and of the least times, and the CPU time -jN spends against
# -j1's (user + system, medians: the cost of cutting the work into parts).
set -u
cd "$(dirname "$0")/.." || exit 2
B=${B:-build}
case $B in /*) BD=$B ;; *) BD=$PWD/$B ;; esac
PTDUMP=$BD/ptdump
VIEWS=${VIEWS:---stats --call-trace --call-ret-trace --branches --folded --report --events}
PAIRS=${PAIRS:-5}
JOBS=${JOBS:-$(nproc)}
export PTREC_PLUGIN=${PTREC_PLUGIN:-$BD/ptrec-emu.so}
TMP=$(mktemp -d /tmp/jscale.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
for t in "$PTDUMP" /usr/bin/time; do
	[ -x "$t" ] || { echo "jscale: missing $t (make B=$B; apt-get install time)" >&2; exit 2; }
done

TRACE=${1:-}
if [ -z "$TRACE" ]; then
	TRACE=$TMP/python.data
	echo "recording python3 (software tracer, no return compression) ..."
	"$BD/ptrec" record --emulate -q -e intel_pt/noretcomp/u -o "$TRACE" -- /usr/bin/python3 -S -c \
		'import json; d = {str(i): [i] * 8 for i in range(20000)}; print(len(json.dumps(sorted(d.items()))))' \
		> /dev/null || { echo "jscale: the recording failed" >&2; exit 1; }
fi
[ -r "$TRACE" ] || { echo "jscale: cannot read $TRACE" >&2; exit 2; }

# run OUT ARGS...: one decode to /dev/null, "wall cpu" into OUT
run() {
	local out=$1
	shift
	/usr/bin/time -o "$out" -f '%e %U %S' "$PTDUMP" "$@" "$TRACE" > /dev/null 2> "$TMP/err" ||
		{ echo "jscale: ptdump $* failed: $(tail -1 "$TMP/err")" >&2; exit 1; }
	awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$out" > "$out.x" && mv "$out.x" "$out"
}

# median and least of the numbers on stdin
stat2() {
	sort -n | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f %.2f\n", m, v[1] }'
}

echo "trace: $TRACE ($(du -h "$TRACE" | cut -f1) on disk), -j1 against -j$JOBS, $PAIRS pairs each, load $(cut -d' ' -f1-3 /proc/loadavg)"

run "$TMP/alone" -j1 --stats
for i in $(seq "$JOBS"); do
	run "$TMP/at.$i" -j1 --stats &
done
wait
alone=$(cut -d' ' -f1 "$TMP/alone")
together=$(cat "$TMP"/at.* | cut -d' ' -f1 | sort -n | tail -1)
awk -v a="$alone" -v t="$together" -v n="$JOBS" \
	'BEGIN { printf "ceiling: %d decodes at once %.2f s, one alone %.2f s: %.2fx\n", n, t, a, n * a / t }'

for i in 1 2 3; do
	s=$(date +%s%N)
	"$PTDUMP" --call-trace -j"$JOBS" "$TRACE" | head -c1 > /dev/null
	e=$(date +%s%N)
	echo $(((e - s) / 1000000))
done | sort -n | head -1 | awk '{ printf "start: %.3f s to the first byte of --call-trace -j'"$JOBS"'\n", $1 / 1000 }'

printf '%-18s %15s %15s %8s %8s %8s\n' view "-j1 med/least" "-j$JOBS med/least" "med" "least" "cpu"
for v in $VIEWS; do
	: > "$TMP/w1"; : > "$TMP/wn"; : > "$TMP/c1"; : > "$TMP/cn"
	for _ in $(seq "$PAIRS"); do
		run "$TMP/t" "$v" -j1
		cut -d' ' -f1 "$TMP/t" >> "$TMP/w1"; cut -d' ' -f2 "$TMP/t" >> "$TMP/c1"
		run "$TMP/t" "$v" -j"$JOBS"
		cut -d' ' -f1 "$TMP/t" >> "$TMP/wn"; cut -d' ' -f2 "$TMP/t" >> "$TMP/cn"
	done
	read -r m1 l1 < <(stat2 < "$TMP/w1")
	read -r mn ln < <(stat2 < "$TMP/wn")
	read -r c1 _ < <(stat2 < "$TMP/c1")
	read -r cn _ < <(stat2 < "$TMP/cn")
	awk -v v="$v" -v m1="$m1" -v l1="$l1" -v mn="$mn" -v ln="$ln" -v c1="$c1" -v cn="$cn" \
		'BEGIN { printf "%-18s %7.2f/%-7.2f %7.2f/%-7.2f %7.2fx %7.2fx %7.2fx\n", v, m1, l1, mn, ln, m1 / mn, l1 / ln, cn / c1 }'
done
