#!/usr/bin/env bash
# Decode benchmark: every ptdump view against the bare libipt loop and
# against perf script, on software-tracer recordings of a synthetic loop and
# of real programs, with and without return compression. Not part of make
# check.
#   bench/decode.sh [SIZE] [DIR]
# SIZE is the argument of tests/progs/loop (thousands of outer iterations;
# default 3500, which with noretcomp gives about 110 MB of Intel PT). DIR
# holds the trace files while the benchmark runs (default: a new directory in
# /tmp). B names the build directory (default build; run 'make B=... tests
# bench' first).
# Environment:
#   WORKLOADS  which recordings (default "loop gzip python"): loop is
#              tests/progs/loop SIZE, gzip is gzip -9 of GZIP_MB (default 2)
#              MB of text, python is python3 running a short script
#   RETCOMP    "noretcomp retcomp" (default): each workload recorded with
#              return compression off and on
#   VIEWS      the ptdump views timed (default: --stats --call-trace
#              --call-ret-trace --branches --events --insn-trace)
#   RUNS       runs of each decode; the least CPU time counts (default 1)
#   JOBS       the -j of the parallel rows (default: the online CPUs)
#   PAR_VIEWS  the views decoded with -j1 and -j JOBS for those rows (default:
#              --call-trace --stats --insn-trace)
# The last row of each trace is --stats with whole streams in memory
# (--buffer 0): its RSS against the --stats row's (the default windows of 2
# MiB) shows what decoding in windows saves.
#
# For each trace and view: CPU time (user + system; other load on the
# machine disturbs it less than wall time) and wall time, MB of PT and
# million instructions per CPU-second, peak resident memory, and the ratios
# to the libipt floor (bench/ipt_floor with ptdump's block-decoder
# configuration, on the raw export of the same stream and images) and to
# perf script --call-trace on the same trace exported with --to-perf-data.
# The libipt-core rows decode with --core libipt (ptdump's views over
# libipt's block decoder).
# The view rows decode with -j1 (one pass, no threads: CPU time against the
# floor); the parallel rows then decode with -j JOBS and give the speedup,
# wall time of -j1 over that of -j JOBS from the same run (the machine's
# load shown before and after: another process's load slows the threads).
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
case $B in /*) BD=$B ;; *) BD=$PWD/$B ;; esac
SIZE=${1:-3500}
PTREC=$BD/ptrec
PTDUMP=$BD/ptdump
LOOP=$BD/progs/loop
FLOOR=$BD/bench/ipt_floor
WORKLOADS=${WORKLOADS:-loop gzip python}
RETCOMP=${RETCOMP:-noretcomp retcomp}
VIEWS=${VIEWS:---stats --call-trace --call-ret-trace --branches --events --insn-trace}
JOBS=${JOBS:-$(nproc)}
PAR_VIEWS=${PAR_VIEWS:---call-trace --stats --insn-trace}
RUNS=${RUNS:-1}
GZIP_MB=${GZIP_MB:-2}
export PTREC_PLUGIN=${PTREC_PLUGIN:-$BD/ptrec-emu.so}
for f in "$PTREC" "$PTDUMP" "$PTREC_PLUGIN" "$LOOP"; do
	if [ ! -e "$f" ]; then
		echo "missing $f: run 'make B=$B tests bench' first" >&2
		exit 2
	fi
done
command -v qemu-x86_64 >/dev/null || { echo "qemu-x86_64 not found: apt-get install qemu-user" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found: apt-get install time" >&2; exit 2; }
if [ -n "${2:-}" ]; then
	DIR=$2
	mkdir -p "$DIR" || exit 2
else
	DIR=$(mktemp -d /tmp/ptrec-bench.XXXXXX) || exit 2
	trap 'rm -rf "$DIR"' EXIT
fi

now() { date +%s%N; }

# measure CMD...: runs CMD RUNS times, output to /dev/null; sets cpu (the
# least user + system seconds), wall (seconds of that run) and rss (the
# largest peak resident set, MB).
measure() {
	local i t0 t1 c r
	cpu= wall= rss=0
	for ((i = 0; i < RUNS; i++)); do
		t0=$(now)
		/usr/bin/time -f '%U %S %M' -o "$DIR/time.txt" "$@" >/dev/null 2>"$DIR/err.txt"
		t1=$(now)
		c=$(awk 'END { printf "%.2f", $1 + $2 }' "$DIR/time.txt")
		r=$(awk 'END { printf "%.1f", $3 / 1024 }' "$DIR/time.txt")
		if [ -z "$cpu" ] || awk -v a="$c" -v b="$cpu" 'BEGIN { exit !(a < b) }'; then
			cpu=$c
			wall=$(awk -v n=$((t1 - t0)) 'BEGIN { printf "%.2f", n / 1e9 }')
		fi
		rss=$(awk -v a="$r" -v b="$rss" 'BEGIN { print (a > b) ? a : b }')
	done
}

# record NAME RETCOMP CMD...: a software-tracer recording of CMD.
record() {
	local name=$1 rc=$2 ev=intel_pt//u t0 t1
	shift 2
	[ "$rc" = noretcomp ] && ev=intel_pt/noretcomp/u
	t0=$(now)
	"$PTREC" record --emulate -q -e "$ev" -o "$DIR/$name.data" -- "$@" >/dev/null 2>"$DIR/rec.err" ||
		{ echo "recording $name failed:" >&2; head -n 3 "$DIR/rec.err" >&2; return 1; }
	t1=$(now)
	echo "== $name: $* (recorded in $(( (t1 - t0) / 1000000 )) ms)"
}

# row LABEL: one line of figures for the last measure.
row() {
	awk -v v="$1" -v b="$bytes" -v i="$insns" -v c="$cpu" -v w="$wall" -v rss="$rss" \
		-v f="${floor_cpu:-0}" -v p="${perf_cpu:-0}" 'BEGIN {
		cc = (c > 0) ? c : 0.005
		printf "  %-18s CPU %6.2f s  wall %6.2f s  %7.2f MB/s  %7.2f Minsn/s  RSS %6.1f MB", v, c, w, b / 1e6 / cc, i / 1e6 / cc, rss
		if (f > 0) printf "  x%.2f floor", cc / f
		if (p > 0) printf "  perf/this %.2f", p / cc
		printf "\n" }'
	[ -s "$DIR/err.txt" ] && sed 's/^/      stderr: /' "$DIR/err.txt" | head -n 2
	return 0
}

# bench NAME: every view of $DIR/NAME.data against the floor and perf.
bench() {
	local name=$1 data=$DIR/$1.data stats errors args v
	stats=$("$PTDUMP" --stats "$data")
	bytes=$(sed -n 's/^total: [0-9]* streams*, \([0-9]*\) bytes$/\1/p' <<<"$stats")
	insns=$(sed -n 's/^instructions: \([0-9]*\)$/\1/p' <<<"$stats")
	errors=$(sed -n 's/^errors: \([0-9]*\)$/\1/p' <<<"$stats")
	if [ -z "$bytes" ] || [ -z "$insns" ]; then
		echo "cannot read ptdump --stats:" >&2
		echo "$stats" >&2
		return 1
	fi
	awk -v b="$bytes" -v i="$insns" -v f="$(stat -c %s "$data")" 'BEGIN {
		printf "  trace: %.1f MB of PT, %.1f million instructions, %.2f bytes/insn; file %.1f MB\n",
			b / 1e6, i / 1e6, b / i, f / 1e6 }'
	[ "${errors:-0}" != 0 ] && echo "  note: the decode reported $errors errors"
	floor_cpu= perf_cpu=
	# The floor: one stream's raw export (the largest), ptdump's configuration.
	rm -rf "$DIR/raw"
	if [ -x "$FLOOR" ] && "$PTDUMP" -q --to-raw "$DIR/raw" "$data" 2>/dev/null; then
		args=$(ls -S "$DIR"/raw/*.ptxed.args | head -n 1)
		measure sh -c "cd '$DIR/raw' && exec '$FLOOR' --ptdump-config 1 \$(cat '$args')"
		row libipt-floor
		floor_cpu=$cpu
		[ "$(ls "$DIR"/raw/*.ptxed.args | wc -l)" -gt 1 ] &&
			echo "      (the floor decodes the largest of $(ls "$DIR"/raw/*.ptxed.args | wc -l) streams only)"
	fi
	if command -v perf >/dev/null && "$PTDUMP" -q --to-perf-data "$DIR/$name.perf" "$data"; then
		measure perf script -i "$DIR/$name.perf" --symfs "$DIR/$name.perf.debug" --call-trace
		row perf-call-trace
		perf_cpu=$cpu
	fi
	for v in $VIEWS; do
		measure "$PTDUMP" -j1 "$v" "$data"
		row "ptdump $v"
	done
	# The same with libipt's block decoder as ptdump's core (--core libipt).
	for v in --stats --call-trace; do
		measure "$PTDUMP" -j1 --core libipt "$v" "$data"
		row "libipt-core $v"
	done
	# Parallel decoding: -j JOBS against -j1, wall time, same output.
	for v in $PAR_VIEWS; do
		local w1 c1 ok
		measure "$PTDUMP" -j1 "$v" "$data"
		w1=$wall c1=$cpu
		"$PTDUMP" -j1 "$v" "$data" 2>/dev/null | cksum >"$DIR/j1.sum"
		measure "$PTDUMP" -j"$JOBS" "$v" "$data"
		ok=same
		"$PTDUMP" -j"$JOBS" "$v" "$data" 2>/dev/null | cksum | cmp -s - "$DIR/j1.sum" || ok=DIFFERENT
		awk -v v="$v" -v j="$JOBS" -v w1="$w1" -v c1="$c1" -v w="$wall" -v c="$cpu" -v ok="$ok" 'BEGIN {
			printf "  %-18s -j1 wall %6.2f s CPU %6.2f s  -j%d wall %6.2f s CPU %6.2f s  speedup x%.2f  output %s\n",
				v, w1, c1, j, w, c, (w > 0 ? w1 / w : 0), ok }'
	done
	# Memory: whole streams in memory against the default decode windows.
	measure "$PTDUMP" --stats --buffer 0 "$data"
	row "--stats --buffer 0"
	rm -rf "$DIR/raw" "$DIR/$name.perf" "$DIR/$name.perf.debug"
}

echo "machine: $(nproc) CPUs, $(uname -r); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for w in $WORKLOADS; do
	for rc in $RETCOMP; do
		case $w in
		loop) record "loop-$rc" "$rc" "$LOOP" "$SIZE" || continue ;;
		gzip)
			[ -e "$DIR/gzip.in" ] || seq 1 100000000 | head -c $((GZIP_MB * 1000000)) >"$DIR/gzip.in"
			record "gzip-$rc" "$rc" /bin/gzip -9 -c "$DIR/gzip.in" || continue ;;
		python)
			record "python-$rc" "$rc" /usr/bin/python3 -S -c \
				'import json; d = {str(i): [i] * 8 for i in range(20000)}; print(len(json.dumps(sorted(d.items()))))' ||
				continue ;;
		*) echo "unknown workload $w" >&2; continue ;;
		esac
		bench "$w-$rc"
		rm -f "$DIR/$w-$rc.data"
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "CPU: user + system seconds (the least of RUNS runs); MB/s and Minsn/s: MB of"
echo "Intel PT and million instructions (from --stats) per CPU-second; RSS: peak"
echo "resident memory. x floor: CPU time over that of bench/ipt_floor, libipt's block"
echo "decoder alone on the same stream and images configured as ptdump's (blocks end"
echo "at calls and jumps, tick events), no events or output. perf/this: CPU time of"
echo "perf script --call-trace (perf's own Intel PT decoder) on the same trace"
echo "exported with ptdump --to-perf-data, over this view's. libipt-core: ptdump with"
echo "--core libipt (libipt's block decoder under the same views)."
